"""Step-level rules: keys, groups, file-level depends_on, mirrors, PR-only steps, problems."""

from __future__ import annotations

import pytest

from bot.routing import checks, model
from tests.routing.trees import JOB, messages, one, routes


def test_a_key_is_derived_from_the_label() -> None:
    # The generator's rule: spaces , + : . / become "-", ( ) % go, the rest is kept.
    step = one("  - label: 'Basic Models (TP=2)'\n")
    assert (step.key, step.key_derived) == ("basic-models-tp=2", True)
    assert one("  - label: Spec Decode MTP hybrid (B200)\n").key == "spec-decode-mtp-hybrid-b200"
    assert one("  - label: 'Kernels %N: a+b, c.d/e'\n").key == "kernels-n--a-b--c-d-e"
    assert one("  - label: t\n    key: ''\n").key_derived is True
    assert one("  - label: t\n    key: mine\n").key_derived is False


def test_a_file_depends_on_fills_missing_and_empty_lists() -> None:
    job = (
        "group: Area\ndepends_on:\n  - image-build\nsteps:\n  - label: a\n  - label: b\n"
        "    depends_on: []\n  - label: c\n    depends_on: [image-build-cpu]\n"
        "  - label: d\n    depends_on: ~\n    source_file_dependencies: [csrc/]\n"
    )
    steps = [step for step in routes(job).steps if step.file == JOB]
    assert [step.depends_on for step in steps] == [
        ("image-build",),
        ("image-build",),
        ("image-build-cpu",),
        ("image-build",),
    ]
    assert {step.group for step in steps} == {"Area"}
    # The generator runs every step of such a file when the file itself changes.
    assert steps[3].source_file_dependencies == ("csrc/", JOB)
    assert steps[0].source_file_dependencies == (JOB,)


def test_a_file_group_wins_over_the_step_group() -> None:
    assert one("  - label: t\n    group: Mine\n").group == "Mine"
    job = "group: File\nsteps:\n  - label: t\n    group: Mine\n"
    assert [s.group for s in routes(job).steps if s.file == JOB] == ["File"]
    job = "group: ''\nsteps:\n  - label: t\n    group: ''\n"
    assert [s.group for s in routes(job).steps if s.file == JOB] == [None]


def test_typos_are_dropped_and_reported() -> None:
    step = one("  - label: t\n    num_device: 4\n")
    assert (step.queue, step.gpus) == ("gpu_1_queue", 1)
    assert checks.MSG_UNKNOWN_FIELD.format(field="num_device") in messages(
        "steps:\n  - label: t\n    num_device: 4\n    depends_on: [image-build]\n"
    )


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("L4", checks.MSG_DEVICE_CASE.format(device="L4", known="l4")),
        ("tpu", checks.MSG_UNKNOWN_DEVICE.format(device="tpu", queue="gpu_1_queue")),
    ],
)
def test_unknown_devices_are_reported(device: str, message: str) -> None:
    job = f"depends_on: [image-build]\nsteps:\n  - label: t\n    device: {device}\n"
    assert messages(job) == [message]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("    device: l4\n", checks.MSG_L4_DEVICES.format(device="l4", most=4)),
        ("    device: l4\n    num_devices: 8\n", checks.MSG_L4_DEVICES.format(device="l4", most=4)),
        (
            "    device: l4\n    num_devices: 1\n    no_plugin: true\n",
            checks.MSG_L4_NO_PLUGIN.format(device="l4"),
        ),
        (
            "    device: l4\n    num_devices: 2\n    num_nodes: 2\n",
            checks.MSG_MULTI_NODE_KUBERNETES.format(queue="l4-k8s"),
        ),
        (
            "    device: h100\n    no_plugin: true\n",
            checks.MSG_KUBERNETES_NO_POD.format(queue="mithril-h100-pool"),
        ),
    ],
)
def test_step_invariants(fields: str, message: str) -> None:
    job = f"depends_on: [image-build]\nsteps:\n  - label: t\n{fields}"
    assert messages(job) == [message]


def test_concurrency_with_its_group_is_fine() -> None:
    job = "steps:\n  - label: t\n    depends_on: [image-build]\n    concurrency: 1\n"
    assert messages(job + "    concurrency_group: g\n") == []


def test_keys_are_unique_and_dependencies_exist() -> None:
    job = "depends_on: [image-build]\nsteps:\n  - label: t\n  - label: t\n    depends_on: [nope]\n"
    assert messages(job) == [
        checks.MSG_DUPLICATE_STEP_KEY.format(key="t", file=JOB, line=3),
        checks.MSG_UNKNOWN_DEPENDENCY.format(key="nope"),
        checks.MSG_NOT_AFTER_PRODUCER.format(suffix="", producer="image-build"),
    ]


def test_the_image_needs_its_producer_among_the_dependencies() -> None:
    job = "depends_on: [image-build-cpu]\nsteps:\n  - label: t\n"
    assert messages(job) == [
        checks.MSG_NOT_AFTER_PRODUCER.format(suffix="", producer="image-build")
    ]
    nightly_cpu = "depends_on: [image-build-cpu]\nsteps:\n  - label: t\n    device: cpu\n"
    assert messages(nightly_cpu) == []
    assert messages(nightly_cpu, {"TORCH_NIGHTLY": "1"}) == [
        checks.MSG_NO_PRODUCER.format(suffix="-torch-nightly-cpu")
    ]


def _mirrored(mirror: str, fields: str = "") -> model.Routes:
    return routes(f"depends_on: [image-build]\nsteps:\n  - label: T\n{fields}    mirror:\n{mirror}")


def test_an_amd_mirror_adds_a_docker_in_docker_step() -> None:
    result = _mirrored("      amd:\n        device: mi300_1\n")
    _, mirror = (step for step in result.steps if step.file == JOB)
    assert (mirror.key, mirror.label, mirror.queue) == ("amd-t", "AMD: T (mi300_1)", "amd_mi300_1")
    assert (mirror.plugin, mirror.image_suffix, mirror.gpus, mirror.mirror_of) == (
        None,
        None,
        1,
        "t",
    )
    assert result.problems == ()


def test_a_native_amd_mirror_is_a_pod_without_the_commit_image() -> None:
    result = _mirrored(
        "      amd:\n        device: mi300_2\n        dind: false\n", "    num_devices: 2\n"
    )
    mirror = [step for step in result.steps if step.file == JOB][-1]
    assert (mirror.plugin, mirror.image_suffix, mirror.gpus) == ("kubernetes", None, 2)


@pytest.mark.parametrize(
    ("mirror", "message"),
    [
        ("      tpu: {}\n", model.MSG_UNKNOWN_MIRROR.format(target="tpu")),
        ("      amd: {}\n", None),  # an empty mirror makes none
    ],
)
def test_mirror_problems(mirror: str, message: str | None) -> None:
    result = _mirrored(mirror)
    assert [problem.message for problem in result.problems] == ([message] if message else [])
    assert [step.key for step in result.steps if step.file == JOB] == ["t"]


def test_a_pull_request_build_adds_the_pre_commit_step() -> None:
    assert all(not step.pr_only for step in routes("steps: []\n").steps)
    assert all(
        not s.pr_only for s in routes("steps: []\n", {"BUILDKITE_PULL_REQUEST": "false"}).steps
    )
    step = routes("steps: []\n", {"BUILDKITE_PULL_REQUEST": "12"}).steps[-1]
    assert (step.key, step.pr_only, step.queue, step.plugin) == (
        "pre-commit",
        True,
        "small_cpu_queue_premerge",
        None,
    )


def test_run_all_and_nightly_do_not_change_routes() -> None:
    plain = routes("depends_on: [image-build]\nsteps:\n  - label: t\n    optional: true\n")
    other = routes(
        "depends_on: [image-build]\nsteps:\n  - label: t\n    optional: true\n",
        {"RUN_ALL": "1", "NIGHTLY": "1"},
    )
    assert plain == other
    assert plain.steps[0].optional is True
