"""AMD steps as the generator builds them: a step whose own device is an AMD GPU device, and
``mirror.amd`` copies; what it refuses there is fatal."""

from __future__ import annotations

import pytest

from bot.routing import amd, model
from bot.routing.model import RoutedStep, Routes
from tests.routing.trees import JOB, routes

AMD_BUILD = "  - label: ':docker: build AMD image'\n    key: image-build-amd\n"


def amd_routes(steps: str, env: dict[str, str] | None = None) -> Routes:
    return routes(f"steps:\n{AMD_BUILD}{steps}", env)


def job_steps(result: Routes) -> list[RoutedStep]:
    return [s for s in result.steps if s.file == JOB and s.key != "image-build-amd"]


def test_a_step_whose_own_device_is_amd_takes_the_amd_path() -> None:
    result = amd_routes(
        "  - label: Engine (1 GPU)\n    device: mi300_1\n    depends_on: [image-build]\n"
    )
    [step] = job_steps(result)
    assert (step.key, step.label, step.group) == (
        "engine-1-gpu",
        "AMD: Engine (1 GPU) (mi300_1)",
        "Hardware-AMD Tests",
    )
    assert (step.queue, step.plugin, step.image_suffix, step.image) == (
        "amd_mi300_1",
        None,
        None,
        None,
    )
    assert step.depends_on == ("image-build-amd",)
    assert not [p for p in result.problems if p.fatal]


def test_a_native_amd_step_is_a_pod_with_the_device_gpus() -> None:
    [step] = job_steps(
        amd_routes("  - label: N\n    device: mi355_8\n    dind: false\n    num_devices: 8\n")
    )
    assert (step.plugin, step.gpus, step.image_suffix) == ("kubernetes", 8, None)
    [step] = job_steps(amd_routes("  - label: N\n    device: mi355_8\n    no_gpu: true\n"))
    assert step.gpus == 0


def test_a_mirror_reads_its_own_settings_not_the_steps() -> None:
    result = amd_routes(
        "  - label: T\n    dind: false\n    no_plugin: true\n    depends_on: [image-build]\n"
        "    mirror:\n      amd:\n        device: mi300_1\n        label: Custom AMD label\n"
        "        depends_on: [image-build, other, image-build-amd]\n"
    )
    step, mirror = job_steps(result)
    assert (mirror.key, mirror.label, mirror.mirror_of) == ("amd-t", "Custom AMD label", "t")
    # The step's dind: false is not the mirror's: docker-in-docker, no plugin.
    assert mirror.plugin is None
    assert mirror.depends_on == ("image-build-amd", "other")
    assert step.depends_on == ("image-build",)


def test_a_mirror_without_depends_on_waits_for_the_amd_build_only() -> None:
    _, mirror = job_steps(
        amd_routes(
            "  - label: T\n    depends_on: [image-build]\n    num_devices: 2\n"
            "    mirror:\n      amd:\n        device: mi300_2\n"
        )
    )
    assert (mirror.depends_on, mirror.num_devices, mirror.gpus) == (("image-build-amd",), 2, 2)


def test_a_mirror_count_comes_from_its_own_fields_first() -> None:
    result = amd_routes(
        "  - label: T\n    num_devices: 4\n    mirror:\n      amd:\n        device: mi300_1\n"
        "        num_gpus: 1\n"
    )
    assert not [p for p in result.problems if p.fatal]
    assert job_steps(result)[1].num_devices == 1


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (
            "  - label: T\n    device: mi300_4\n    num_devices: 2\n",
            amd.MSG_AMD_COUNT.format(count=2, device="mi300_4", gpus=4),
        ),
        (
            "  - label: T\n    mirror:\n      amd:\n        device: mi999\n",
            amd.MSG_UNKNOWN_AMD_DEVICE.format(device="mi999"),
        ),
        (
            "  - label: T\n    num_devices: 1\n    mirror:\n      amd:\n        device: mi300_4\n",
            amd.MSG_AMD_COUNT.format(count=1, device="mi300_4", gpus=4),
        ),
        (
            "  - label: T\n    mirror:\n      amd:\n        device: mi300_1\n        dind: maybe\n",
            amd.MSG_AMD_DIND,
        ),
        (
            "  - label: T\n    device: mi300_1\n    dind: false\n    no_plugin: true\n",
            amd.MSG_NATIVE_NO_PLUGIN,
        ),
        (
            "  - label: T\n    device: mi300_2\n    dind: false\n    num_devices: 2\n"
            "    num_nodes: 2\n",
            amd.MSG_NATIVE_MULTI_NODE,
        ),
        (
            "  - label: T\n    mirror:\n      amd:\n        label: no device\n",
            model.MSG_BAD_AMD_MIRROR,
        ),
        (
            "  - label: T\n    device: mi300_1\n    agent_tags: {pool: a}\n",
            amd.MSG_AGENT_TAGS_DIND,
        ),
    ],
)
def test_what_the_generator_refuses_on_the_amd_path_is_fatal(steps: str, message: str) -> None:
    result = amd_routes(steps)
    assert [(p.message, p.fatal) for p in result.problems if p.fatal] == [(message, True)]


def test_a_pull_request_build_makes_image_waiting_steps_wait_for_pre_commit() -> None:
    result = routes(
        "steps:\n  - label: a\n    depends_on: [image-build]\n"
        "  - label: b\n    depends_on: [image-build-cpu, pre-commit]\n"
        "  - label: c\n    depends_on: [other]\n"
        "  - label: d\n    key: image-build-extra\n    depends_on: [image-build]\n",
        {"BUILDKITE_PULL_REQUEST": "7"},
    )
    by_key = {s.key: s.depends_on for s in result.steps if s.file == JOB}
    assert by_key == {
        "a": ("image-build", "pre-commit"),
        "b": ("image-build-cpu", "pre-commit"),
        "c": ("other",),
        "image-build-extra": ("image-build",),
    }
    pre_commit = result.steps[-1]
    assert (pre_commit.label, pre_commit.group) == (
        ":github: GitHub pre-commit check",
        "GitHub pre-commit check",
    )
