"""with_overrides: mappings merged, other tables replaced, bad overrides refused."""

from __future__ import annotations

import pytest

from bot.routing import tables as t
from tests.routing.trees import files

BASE = t.default_tables()


def test_mappings_are_merged_and_other_tables_replaced() -> None:
    changed = t.with_overrides(
        BASE,
        {
            "device_queues": {"tpu": "tpu_queue"},
            "default_queue": "gpu_queue",
            "multi_gpu_counts": [2, 4, 8],
            "kubernetes_devices": ["l4"],
            "docker_queues": ["a", "b"],
            "pod_sizes": {
                "h100": {
                    "cpus_per_gpu": 1,
                    "memory_gi_per_gpu": 2,
                    "shm_gi_per_gpu": 3,
                    "gpus_per_node": 8,
                }
            },
            "device_retries": {"h100": {"exit_statuses": [-1, 2]}},
            "default_retry": {"exit_statuses": [-1], "signal_reasons": ["agent_stop"]},
            "amd_device_gpus": {"mi400_1": 1},
            "suffix_order": ["device", "torch_nightly"],
        },
    )
    assert changed.device_queues["tpu"] == "tpu_queue"
    assert changed.device_queues["l4"] == "l4-k8s"
    assert changed.default_queue == "gpu_queue"
    assert changed.multi_gpu_counts == (2, 4, 8)
    assert changed.kubernetes_devices == frozenset({"l4"})
    assert changed.pod_sizes["h100"] == t.PodSize(1, 2, 3, 8)
    assert changed.device_retries["h100"] == t.AutoRetry((-1, 2))
    assert changed.default_retry == t.AutoRetry((-1,), ("agent_stop",))
    assert "tpu" in changed.known_devices()
    assert BASE.default_queue == "gpu_1_queue"


def test_an_override_changes_routing() -> None:
    from bot.routing.model import route

    tables = t.with_overrides(BASE, {"suffix_order": ["device", "torch_nightly"]})
    tree = files("steps:\n  - label: x\n    device: cpu\n")
    step = route(tree, env={"TORCH_NIGHTLY": "1"}, tables=tables).steps[0]
    assert step.image_suffix == "-cpu-torch-nightly"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ([], t.MSG_NOT_A_MAPPING.format(got="list")),
        ({"nope": 1}, t.MSG_UNKNOWN_TABLE.format(name="nope", known=", ".join(t._KINDS))),
        ({1: 1}, t.MSG_UNKNOWN_TABLE.format(name=1, known=", ".join(t._KINDS))),
        (
            {"default_queue": 1},
            t.MSG_BAD_VALUE.format(name="default_queue", expected="text", got=1),
        ),
        (
            {"device_queues": ["x"]},
            t.MSG_BAD_VALUE.format(name="device_queues", expected="a mapping", got=["x"]),
        ),
        (
            {"device_queues": {1: "x"}},
            t.MSG_BAD_VALUE.format(name="device_queues", expected="text keys", got=1),
        ),
        (
            {"amd_device_gpus": {"x": True}},
            t.MSG_BAD_ENTRY.format(
                name="amd_device_gpus", key="x", expected="a whole number", got=True
            ),
        ),
        (
            {"docker_queues": ["a"]},
            t.MSG_BAD_VALUE.format(name="docker_queues", expected=t._EXPECTED["pair"], got=["a"]),
        ),
        (
            {"multi_gpu_counts": "2"},
            t.MSG_BAD_VALUE.format(
                name="multi_gpu_counts", expected=t._EXPECTED["tuple:int"], got="2"
            ),
        ),
        (
            {"cpu_devices": [1]},
            t.MSG_BAD_VALUE.format(name="cpu_devices", expected=t._EXPECTED["set"], got=[1]),
        ),
        (
            {"suffix_order": ["device"]},
            t.MSG_BAD_ORDER.format(parts=sorted(t.SUFFIX_PARTS), got=["device"]),
        ),
        (
            {"suffix_order": 1},
            t.MSG_BAD_VALUE.format(name="suffix_order", expected="a list", got=1),
        ),
        (
            {"pod_sizes": {"l4": {"cpus_per_gpu": 1}}},
            t.MSG_BAD_ENTRY.format(
                name="pod_sizes",
                key="l4",
                expected=t._EXPECTED["pod"],
                got={"cpus_per_gpu": 1},
            ),
        ),
        (
            {"pod_sizes": {"l4": [1]}},
            t.MSG_BAD_ENTRY.format(
                name="pod_sizes", key="l4", expected=t._EXPECTED["pod"], got=[1]
            ),
        ),
        (
            {"default_retry": {"exit_statuses": ["x"]}},
            t.MSG_BAD_VALUE.format(
                name="default_retry", expected=t._EXPECTED["retry"], got={"exit_statuses": ["x"]}
            ),
        ),
        (
            {"default_retry": [1]},
            t.MSG_BAD_VALUE.format(name="default_retry", expected=t._EXPECTED["retry"], got=[1]),
        ),
    ],
)
def test_bad_overrides_are_refused_clearly(overrides: object, message: str) -> None:
    with pytest.raises(t.RoutingTablesError) as refused:
        t.with_overrides(BASE, overrides)
    assert str(refused.value) == message


def test_a_pod_size_with_a_bad_number_is_refused() -> None:
    bad = {"cpus_per_gpu": 1, "memory_gi_per_gpu": 2, "shm_gi_per_gpu": "3", "gpus_per_node": 4}
    with pytest.raises(t.RoutingTablesError):
        t.with_overrides(BASE, {"pod_sizes": {"l4": bad}})
