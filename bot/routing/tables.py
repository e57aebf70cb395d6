"""The pipeline generator's routing tables, as data.

These are ci-infra's tables (PR #484 plus #499, the ``l4`` device). The repo config may
extend or override them with ``with_overrides``: mappings are merged key by key (so a new
device only needs its own entry), every other table is replaced whole. Unknown table names and
values of the wrong type are refused with ``RoutingTablesError``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from bot.core.errors import PermanentError

MSG_UNKNOWN_TABLE = "unknown routing table {name!r} (known: {known})"
MSG_NOT_A_MAPPING = "routing table overrides: expected a mapping, got {got}"
MSG_BAD_VALUE = "routing table {name!r}: expected {expected}, got {got!r}"
MSG_BAD_ENTRY = "routing table {name!r}, entry {key!r}: expected {expected}, got {got!r}"
MSG_BAD_ORDER = "routing table 'suffix_order': expected an order of {parts}, got {got!r}"

# The names of the image suffix parts, for ``suffix_order``.
PART_NIGHTLY = "torch_nightly"
PART_DEVICE = "device"
SUFFIX_PARTS = frozenset({PART_NIGHTLY, PART_DEVICE})


class RoutingTablesError(PermanentError):
    """An override the tables cannot take: a mistake in the config, which retrying
    cannot fix (a delivery that meets it fails at once, with this message)."""


@dataclass(frozen=True)
class PodSize:
    """What a Kubernetes pod template asks per GPU, and a node's GPUs."""

    cpus_per_gpu: int
    memory_gi_per_gpu: int
    shm_gi_per_gpu: int
    gpus_per_node: int


@dataclass(frozen=True)
class AutoRetry:
    """Automatic retries a step gets without an explicit ``retry``."""

    exit_statuses: tuple[int, ...]
    signal_reasons: tuple[str, ...] = ()


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


def _amd_devices() -> dict[str, int]:
    return {
        f"{family}_{count}": count
        for family in ("mi250", "mi300", "mi325", "mi355")
        for count in (1, 2, 4, 8)
    }


_DEVICE_QUEUES = {
    "cpu-small": "small_cpu_queue_premerge",
    "cpu-medium": "medium_cpu_queue_premerge",
    "cpu": "cpu_queue_premerge_us_east_1",
    "l4": "l4-k8s",
    "a100": "a100_queue",
    "h100": "mithril-h100-pool",
    "h200": "H200",
    "h200_18gb": "h200_18gb",
    "h200_35gb": "h200_35gb",
    "b200": "B200",
    "b200-k8s": "b200-k8s",
    "intel_cpu": "intel-cpu",
    "intel_hpu": "intel-hpu",
    "intel_gpu": "intel-gpu",
    "arm_cpu": "arm-cpu",
    "amd_cpu": "amd-cpu",
    **{device: f"amd_{device}" for device in _amd_devices()},
    "gh200": "gh200_queue",
    "ascend_npu": "ascend",
    "dgx-spark": "dgx-spark",
}

STEP_FIELDS = frozenset(
    {
        "label",
        "group",
        "key",
        "depends_on",
        "commands",
        "device",
        "num_devices",
        "num_nodes",
        "no_plugin",
        "soft_fail",
        "optional",
        "parallelism",
        "timeout_in_minutes",
        "env",
        "retry",
        "working_dir",
        "source_file_dependencies",
        "agent_tags",
        "concurrency",
        "concurrency_group",
        "mount_buildkite_agent",
        "no_gpu",
        "dind",
        "mirror",
    }
)


@dataclass(frozen=True)
class RoutingTables:
    """Every table the routing rules read; ``default_tables()`` has the generator's."""

    main_branch: str = "main"
    docker_label_prefix: str = ":docker:"
    arm64_marker: str = "arm64"
    # (on the main branch, elsewhere) for `:docker:` labels.
    arm64_docker_queues: tuple[str, str] = ("arm64_cpu_queue_postmerge", "arm64_cpu_queue_premerge")
    docker_queues: tuple[str, str] = (
        "cpu_queue_postmerge_us_east_1",
        "cpu_queue_premerge_us_east_1",
    )
    label_queues: Mapping[str, str] = field(
        default_factory=lambda: _frozen({"Documentation Build": "small_cpu_queue_premerge"})
    )
    # Matched before the GPU count: an `l4` step with 2 GPUs stays on `l4-k8s`.
    device_queues: Mapping[str, str] = field(default_factory=lambda: _frozen(_DEVICE_QUEUES))
    multi_gpu_counts: tuple[int, ...] = (2, 4)
    multi_gpu_queue: str = "gpu_4_queue"
    # Matched after the GPU count: `zen5` with 2 GPUs lands on `gpu_4_queue`.
    late_device_queues: Mapping[str, str] = field(
        default_factory=lambda: _frozen({"zen5": "amd-zen5-cpu"})
    )
    default_queue: str = "gpu_1_queue"
    kubernetes_devices: frozenset[str] = frozenset({"h100", "a100", "b200-k8s", "l4"})
    pod_sizes: Mapping[str, PodSize] = field(
        default_factory=lambda: _frozen({"l4": PodSize(10, 40, 24, 4)})
    )
    device_retries: Mapping[str, AutoRetry] = field(
        default_factory=lambda: _frozen(
            {"l4": AutoRetry((-1, 1, 128), ("agent_stop", "agent_refused"))}
        )
    )
    default_retry: AutoRetry = AutoRetry((-1,))
    # Docker steps on these devices get no `gpus: all`.
    cpu_devices: frozenset[str] = frozenset(
        {"cpu", "cpu-small", "cpu-medium", "intel_cpu", "arm_cpu", "amd_cpu", "zen5"}
    )
    nightly_suffix: str = "-torch-nightly"
    device_suffixes: Mapping[str, str] = field(
        default_factory=lambda: _frozen(
            {"cpu": "-cpu", "cpu-small": "-cpu", "cpu-medium": "-cpu", "dgx-spark": "-arm64"}
        )
    )
    suffix_order: tuple[str, ...] = (PART_NIGHTLY, PART_DEVICE)
    # The step key that builds each image suffix (invariant 2).
    producers: Mapping[str, str] = field(
        default_factory=lambda: _frozen(
            {
                "": "image-build",
                "-torch-nightly": "image-build",
                "-cpu": "image-build-cpu",
                "-arm64": "arm64-image-build",
            }
        )
    )
    amd_device_gpus: Mapping[str, int] = field(default_factory=lambda: _frozen(_amd_devices()))
    amd_key_prefix: str = "amd-"
    amd_label: str = "AMD: {label} ({device})"
    amd_group: str = "Hardware-AMD Tests"
    # The CUDA image build, and the AMD one that replaces it in an AMD step's depends_on.
    image_build_key: str = "image-build"
    amd_image_build: str = "image-build-amd"
    step_fields: frozenset[str] = STEP_FIELDS
    # PR builds add a step that waits for the pre-commit check; every step that waits for an
    # image build (a key containing ``image_build_key``) waits for it too.
    pr_step_key: str = "pre-commit"
    pr_step_label: str = ":github: GitHub pre-commit check"
    pr_step_group: str = "GitHub pre-commit check"
    pr_step_device: str = "cpu-small"

    def known_devices(self) -> frozenset[str]:
        """Every device name a table knows (case-sensitive)."""
        return frozenset(self.device_queues) | frozenset(self.late_device_queues)


def default_tables() -> RoutingTables:
    return RoutingTables()


# How each table is checked and merged: "map:<value kind>", "set", "tuple:<item kind>" or a
# scalar kind. Values of nested tables (pod sizes, retries) are mappings of their fields.
_KINDS: Mapping[str, str] = {
    "main_branch": "str",
    "docker_label_prefix": "str",
    "arm64_marker": "str",
    "arm64_docker_queues": "pair",
    "docker_queues": "pair",
    "label_queues": "map:str",
    "device_queues": "map:str",
    "multi_gpu_counts": "tuple:int",
    "multi_gpu_queue": "str",
    "late_device_queues": "map:str",
    "default_queue": "str",
    "kubernetes_devices": "set",
    "pod_sizes": "map:pod",
    "device_retries": "map:retry",
    "default_retry": "retry",
    "cpu_devices": "set",
    "nightly_suffix": "str",
    "device_suffixes": "map:str",
    "suffix_order": "order",
    "producers": "map:str",
    "amd_device_gpus": "map:int",
    "amd_key_prefix": "str",
    "amd_label": "str",
    "amd_group": "str",
    "image_build_key": "str",
    "amd_image_build": "str",
    "step_fields": "set",
    "pr_step_key": "str",
    "pr_step_label": "str",
    "pr_step_group": "str",
    "pr_step_device": "str",
}


def with_overrides(tables: RoutingTables, overrides: object) -> RoutingTables:
    """``tables`` with ``overrides`` applied: mappings merged, other tables replaced."""
    if not isinstance(overrides, Mapping):
        raise RoutingTablesError(MSG_NOT_A_MAPPING.format(got=type(overrides).__name__))
    changes: dict[str, object] = {}
    for name, value in overrides.items():
        kind = _KINDS.get(name) if isinstance(name, str) else None
        if kind is None:
            raise RoutingTablesError(MSG_UNKNOWN_TABLE.format(name=name, known=", ".join(_KINDS)))
        if kind.startswith("map:"):
            entries = _mapping(name, value, kind.removeprefix("map:"))
            changes[name] = _frozen({**getattr(tables, name), **entries})
        else:
            changes[name] = _convert(name, value, kind)
    return dataclasses.replace(tables, **changes)  # type: ignore[arg-type]


def _mapping(name: str, value: object, kind: str) -> dict[str, object]:
    if not isinstance(value, Mapping):
        raise RoutingTablesError(MSG_BAD_VALUE.format(name=name, expected="a mapping", got=value))
    entries: dict[str, object] = {}
    for key, entry in value.items():
        if not isinstance(key, str):
            raise RoutingTablesError(MSG_BAD_VALUE.format(name=name, expected="text keys", got=key))
        try:
            entries[key] = _convert(name, entry, kind)
        except RoutingTablesError:
            raise RoutingTablesError(
                MSG_BAD_ENTRY.format(name=name, key=key, expected=_EXPECTED[kind], got=entry)
            ) from None
    return entries


_EXPECTED = {
    "str": "text",
    "int": "a whole number",
    "pair": "a list of two queue names (main branch, elsewhere)",
    "set": "a list of text",
    "tuple:int": "a list of whole numbers",
    "pod": "cpus_per_gpu, memory_gi_per_gpu, shm_gi_per_gpu, gpus_per_node",
    "retry": "exit_statuses (whole numbers) and optional signal_reasons (text)",
    "order": "a list",
}


def _convert(name: str, value: object, kind: str) -> object:
    converted = _CONVERTERS[kind](value)
    if converted is None:
        raise RoutingTablesError(
            MSG_BAD_VALUE.format(name=name, expected=_EXPECTED[kind], got=value)
        )
    if kind == "order" and (len(converted) != len(SUFFIX_PARTS) or set(converted) != SUFFIX_PARTS):
        raise RoutingTablesError(MSG_BAD_ORDER.format(parts=sorted(SUFFIX_PARTS), got=value))
    return converted


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _texts(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


def _ints(value: object) -> tuple[int, ...] | None:
    if isinstance(value, list | tuple) and all(_is_int(item) for item in value):
        return tuple(value)
    return None


def _pair(value: object) -> tuple[str, ...] | None:
    texts = _texts(value)
    return texts if texts is not None and len(texts) == 2 else None


def _set(value: object) -> frozenset[str] | None:
    texts = _texts(value)
    return None if texts is None else frozenset(texts)


def _pod(value: object) -> PodSize | None:
    names = [item.name for item in dataclasses.fields(PodSize)]
    if not isinstance(value, Mapping) or sorted(value) != sorted(names):
        return None
    if not all(_is_int(value[name]) for name in names):
        return None
    return PodSize(**{name: value[name] for name in names})


def _retry(value: object) -> AutoRetry | None:
    if not isinstance(value, Mapping) or not set(value) <= {"exit_statuses", "signal_reasons"}:
        return None
    statuses = _ints(value.get("exit_statuses"))
    reasons = _texts(value.get("signal_reasons", []))
    if statuses is None or reasons is None:
        return None
    return AutoRetry(statuses, reasons)


_CONVERTERS: Mapping[str, Any] = {
    "str": lambda value: value if isinstance(value, str) else None,
    "int": lambda value: value if _is_int(value) else None,
    "pair": _pair,
    "set": _set,
    "tuple:int": _ints,
    "pod": _pod,
    "retry": _retry,
    "order": _texts,
}
