"""Plugins, image suffixes, GPU counts, pods and automatic retries."""

from __future__ import annotations

import pytest

from bot.routing.rules import PodResources
from tests.routing.trees import one

NIGHTLY = {"TORCH_NIGHTLY": "1"}


@pytest.mark.parametrize(
    "fields",
    ["    no_plugin: true\n", "    num_devices: 2\n    num_nodes: 2\n"],
)
def test_host_steps_get_no_plugin_and_pull_no_commit_image(fields: str) -> None:
    step = one(f"  - label: t\n{fields}")
    assert (step.plugin, step.image_suffix, step.image) == (None, None, None)


def test_docker_labels_get_no_plugin() -> None:
    step = one("  - label: ':docker: build'\n")
    assert (step.plugin, step.image_suffix, step.gpus) == (None, None, 0)


def test_a_two_node_l4_step_lands_on_l4_k8s_with_no_pod() -> None:
    step = one("  - label: t\n    device: l4\n    num_devices: 2\n    num_nodes: 2\n")
    assert (step.queue, step.plugin, step.pod, step.multi_node) == ("l4-k8s", None, None, True)
    assert step.gpus == 2


@pytest.mark.parametrize("device", ["h100", "a100", "b200-k8s", "l4"])
def test_kubernetes_devices_get_the_kubernetes_plugin(device: str) -> None:
    step = one(f"  - label: t\n    device: {device}\n")
    assert (step.plugin, step.gpus) == ("kubernetes", 1)


def test_the_l4_pod_is_sized_per_gpu() -> None:
    step = one("  - label: t\n    device: l4\n    num_devices: 3\n")
    assert step.pod == PodResources(gpus=3, cpus=30, memory_gi=120, shm_gi=72)
    assert one("  - label: t\n    device: h100\n").pod is None


@pytest.mark.parametrize(("device", "gpus"), [("h200", 1), ("cpu-small", 0), ("zen5", 0)])
def test_other_devices_get_docker(device: str, gpus: int) -> None:
    step = one(f"  - label: t\n    device: {device}\n")
    assert (step.plugin, step.gpus) == ("docker", gpus)


def test_no_gpu_docker_steps_ask_no_gpu() -> None:
    assert one("  - label: t\n    no_gpu: true\n").gpus == 0
    assert one("  - label: t\n    num_devices: 4\n").gpus == 4


@pytest.mark.parametrize(
    ("device", "env", "suffix"),
    [
        ("", {}, ""),
        ("    device: cpu\n", {}, "-cpu"),
        ("    device: cpu-small\n", {}, "-cpu"),
        ("    device: cpu-medium\n", {}, "-cpu"),
        ("    device: dgx-spark\n", {}, "-arm64"),
        ("    device: arm_cpu\n", {}, ""),
        ("", NIGHTLY, "-torch-nightly"),
        ("    device: cpu-small\n", NIGHTLY, "-torch-nightly-cpu"),
        ("    device: dgx-spark\n", NIGHTLY, "-torch-nightly-arm64"),
        ("", {"TORCH_NIGHTLY": "true"}, ""),
    ],
)
def test_the_image_suffix_follows_the_lane_and_device(
    device: str, env: dict[str, str], suffix: str
) -> None:
    assert one(f"  - label: t\n{device}", env).image_suffix == suffix


def test_the_suffix_never_depends_on_depends_on() -> None:
    step = one("  - label: t\n    device: cpu-small\n    depends_on: [image-build]\n")
    assert step.image_suffix == "-cpu"


def test_the_image_repository_follows_the_branch() -> None:
    env = {"BUILDKITE_COMMIT": "abc"}
    assert one("  - label: t\n", env).image == "registry.example/premerge-repo:abc"
    main = one("  - label: t\n", {**env, "BUILDKITE_BRANCH": "main"})
    assert main.image == "registry.example/main-repo:abc"
    assert one("  - label: t\n").image == "registry.example/premerge-repo:$BUILDKITE_COMMIT"


def test_l4_steps_retry_automatically_unless_they_say_how() -> None:
    step = one("  - label: t\n    device: l4\n    num_devices: 1\n")
    assert step.retry_exit_statuses == (-1, 1, 128)
    assert step.retry_signal_reasons == ("agent_stop", "agent_refused")
    explicit = one("  - label: t\n    device: l4\n    num_devices: 1\n    retry: {manual: true}\n")
    assert (explicit.retry_exit_statuses, explicit.retry_signal_reasons) == ((-1,), ())
    assert one("  - label: t\n").retry_exit_statuses == (-1,)
