"""The generator's rules for one step: key, queue, plugin, image suffix, GPUs, retries.

Choices where ci-routing.md is silent:

- A step without ``key`` gets the generator's derived key (ci-routing.md, checked against its
  outputs): lower-cased; a space, ``,``, ``+``, ``:``, ``.`` or ``/`` becomes ``-`` one for one
  (runs are not collapsed, ends are not trimmed); ``(``, ``)`` and ``%`` are dropped; every
  other character is kept as it is.
- ``gpus`` is what the step asks of its agent: the Kubernetes GPU limit (``num_devices or
  1``); for docker, 0 on CPU devices or with ``no_gpu``, else ``num_devices or 1``; with no
  plugin, ``num_devices or 0`` (a multi-node step's count is per node).
- An explicit ``retry`` replaces a device's automatic retries but not the one every step gets
  on exit -1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.routing.tables import PART_NIGHTLY, AutoRetry, PodSize, RoutingTables

PLUGIN_DOCKER = "docker"
PLUGIN_KUBERNETES = "kubernetes"

# What the generator does to a label to make a key: these characters become "-", these go.
_KEY_DASHED = " ,+:./"
_KEY_DROPPED = "()%"
_KEY_TRANSLATION = str.maketrans(dict.fromkeys(_KEY_DASHED, "-") | dict.fromkeys(_KEY_DROPPED))


@dataclass(frozen=True)
class Build:
    """The generator's inputs that change routing."""

    on_main: bool
    torch_nightly: bool


@dataclass(frozen=True)
class PodResources:
    gpus: int
    cpus: int
    memory_gi: int
    shm_gi: int


def derived_key(label: str) -> str:
    return label.lower().translate(_KEY_TRANSLATION)


def _int(fields: Mapping[str, object], name: str) -> int | None:
    value = fields.get(name)
    return value if isinstance(value, int) else None


def num_devices(fields: Mapping[str, object]) -> int | None:
    return _int(fields, "num_devices")


def num_nodes(fields: Mapping[str, object]) -> int | None:
    return _int(fields, "num_nodes")


def device(fields: Mapping[str, object]) -> str | None:
    value = fields.get("device")
    return value if isinstance(value, str) else None


def is_docker_label(label: str, tables: RoutingTables) -> bool:
    return label.startswith(tables.docker_label_prefix)


def queue(fields: Mapping[str, object], build: Build, tables: RoutingTables) -> str:
    """The first rule of the queue table that matches."""
    label = str(fields["label"])
    if is_docker_label(label, tables):
        pair = tables.arm64_docker_queues if tables.arm64_marker in label else tables.docker_queues
        return pair[0] if build.on_main else pair[1]
    if label in tables.label_queues:
        return tables.label_queues[label]
    name = device(fields) or ""
    if name in tables.device_queues:
        return tables.device_queues[name]
    if num_devices(fields) in tables.multi_gpu_counts:
        return tables.multi_gpu_queue
    if name in tables.late_device_queues:
        return tables.late_device_queues[name]
    return tables.default_queue


def plugin(fields: Mapping[str, object], tables: RoutingTables) -> str | None:
    """No plugin for host steps; Kubernetes for the pod devices; docker for the rest."""
    nodes = num_nodes(fields)
    if (
        fields.get("no_plugin") is True
        or is_docker_label(str(fields["label"]), tables)
        or (nodes is not None and nodes >= 2)
    ):
        return None
    return PLUGIN_KUBERNETES if device(fields) in tables.kubernetes_devices else PLUGIN_DOCKER


def image_suffix(
    fields: Mapping[str, object], step_plugin: str | None, build: Build, tables: RoutingTables
) -> str | None:
    """The commit image's tag suffix; None when the step pulls no commit image (no plugin).

    It never depends on ``depends_on``: only on the lane and the device.
    """
    if step_plugin is None:
        return None
    parts = {
        PART_NIGHTLY: tables.nightly_suffix if build.torch_nightly else "",
        "device": tables.device_suffixes.get(device(fields) or "", ""),
    }
    return "".join(parts[part] for part in tables.suffix_order)


def gpus(fields: Mapping[str, object], step_plugin: str | None, tables: RoutingTables) -> int:
    count = num_devices(fields)
    if step_plugin is None:
        return count or 0
    if step_plugin == PLUGIN_DOCKER and (
        device(fields) in tables.cpu_devices or fields.get("no_gpu") is True
    ):
        return 0
    return count or 1


def pod(
    fields: Mapping[str, object], step_plugin: str | None, step_gpus: int, tables: RoutingTables
) -> PodResources | None:
    size: PodSize | None = tables.pod_sizes.get(device(fields) or "")
    if step_plugin != PLUGIN_KUBERNETES or size is None:
        return None
    return PodResources(
        step_gpus,
        size.cpus_per_gpu * step_gpus,
        size.memory_gi_per_gpu * step_gpus,
        size.shm_gi_per_gpu * step_gpus,
    )


def auto_retry(fields: Mapping[str, object], tables: RoutingTables) -> AutoRetry:
    if "retry" in fields:
        return tables.default_retry
    return tables.device_retries.get(device(fields) or "", tables.default_retry)
