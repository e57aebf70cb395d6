"""The queue table of ci-routing.md, one rule per test: first match wins."""

from __future__ import annotations

import pytest

from tests.routing.trees import one

MAIN = {"BUILDKITE_BRANCH": "main"}


@pytest.mark.parametrize(
    ("label", "env", "queue"),
    [
        (":docker: build arm64 image", MAIN, "arm64_cpu_queue_postmerge"),
        (":docker: build arm64 image", {}, "arm64_cpu_queue_premerge"),
        (":docker: build image", MAIN, "cpu_queue_postmerge_us_east_1"),
        (":docker: build image", {"BUILDKITE_BRANCH": "feature"}, "cpu_queue_premerge_us_east_1"),
    ],
)
def test_docker_labels_go_to_the_build_queues_by_branch(
    label: str, env: dict[str, str], queue: str
) -> None:
    step = one(f"  - label: '{label}'\n    device: l4\n    num_devices: 2\n", env)
    assert step.queue == queue


def test_arm64_only_counts_in_a_docker_label() -> None:
    assert one("  - label: arm64 smoke\n").queue == "gpu_1_queue"


def test_documentation_build_changes_the_queue_but_not_the_plugin() -> None:
    step = one("  - label: Documentation Build\n    device: l4\n    num_devices: 1\n")
    assert (step.queue, step.plugin) == ("small_cpu_queue_premerge", "kubernetes")
    assert one("  - label: Documentation Build!\n").queue == "gpu_1_queue"


@pytest.mark.parametrize(
    ("device", "queue"),
    [
        ("cpu-small", "small_cpu_queue_premerge"),
        ("cpu-medium", "medium_cpu_queue_premerge"),
        ("cpu", "cpu_queue_premerge_us_east_1"),
        ("l4", "l4-k8s"),
        ("a100", "a100_queue"),
        ("h100", "mithril-h100-pool"),
        ("h200", "H200"),
        ("h200_18gb", "h200_18gb"),
        ("h200_35gb", "h200_35gb"),
        ("b200", "B200"),
        ("b200-k8s", "b200-k8s"),
        ("intel_cpu", "intel-cpu"),
        ("intel_hpu", "intel-hpu"),
        ("intel_gpu", "intel-gpu"),
        ("arm_cpu", "arm-cpu"),
        ("amd_cpu", "amd-cpu"),
        ("mi250_1", "amd_mi250_1"),
        ("mi300_2", "amd_mi300_2"),
        ("mi325_4", "amd_mi325_4"),
        ("mi355_8", "amd_mi355_8"),
        ("gh200", "gh200_queue"),
        ("ascend_npu", "ascend"),
        ("dgx-spark", "dgx-spark"),
    ],
)
def test_each_device_has_its_queue_even_on_main(device: str, queue: str) -> None:
    assert one(f"  - label: t\n    device: {device}\n", MAIN).queue == queue


def test_a_device_queue_wins_over_the_gpu_count() -> None:
    assert one("  - label: t\n    device: l4\n    num_devices: 4\n").queue == "l4-k8s"


@pytest.mark.parametrize(("device", "count"), [("", 2), ("    device: L4\n", 4)])
def test_two_or_four_devices_go_to_gpu_4_queue(device: str, count: int) -> None:
    step = one(f"  - label: t\n{device}    num_devices: {count}\n")
    assert step.queue == "gpu_4_queue"


def test_zen5_comes_after_the_gpu_count() -> None:
    assert one("  - label: t\n    device: zen5\n").queue == "amd-zen5-cpu"
    assert one("  - label: t\n    device: zen5\n    num_devices: 2\n").queue == "gpu_4_queue"


@pytest.mark.parametrize(
    "fields",
    ["", "    device: L4\n", "    device: CPU\n", "    num_devices: 3\n", "    num_devices: 8\n"],
)
def test_everything_else_goes_to_gpu_1_queue(fields: str) -> None:
    assert one(f"  - label: t\n{fields}").queue == "gpu_1_queue"
