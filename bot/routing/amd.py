"""AMD steps: a step whose own ``device`` is an AMD GPU device, and ``mirror.amd`` copies.

Both go through the generator's AMD path, which differs from the rest in ways that matter for
routing (ci-routing.md, checked against the generator's outputs):

- the queue is the AMD device's; the group is the AMD tests' group; the label is
  ``AMD: <label> (<device>)`` unless the mirror names its own ``label``;
- docker-in-docker (``dind``, the default) runs on the host: no plugin, no commit image;
  native (``dind: false``) is a Kubernetes pod with a ROCm image that is not the commit's;
- ``depends_on`` has ``image-build`` replaced by the AMD image build, which always comes
  first; a mirror reads only its **own** ``depends_on``, ``dind``, ``no_plugin``, not the
  step's;
- ``num_devices`` must equal the device's GPU count (``no_gpu`` asks for none).

What the generator refuses here (an unknown AMD device, a count that does not match, a native
step with ``no_plugin`` or several nodes, a ``dind`` that is not true or false) is fatal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.routing.rules import PLUGIN_KUBERNETES
from bot.routing.tables import RoutingTables

MSG_UNKNOWN_AMD_DEVICE = "unknown AMD device {device!r}: the generator refuses the pipeline"
MSG_AMD_COUNT = (
    "num_devices {count} does not match AMD device {device!r} ({gpus} GPUs): "
    "the generator refuses the pipeline"
)
MSG_AMD_DIND = "dind: expected true or false (the generator refuses the pipeline)"
MSG_NATIVE_NO_PLUGIN = (
    "a native AMD step (dind: false) cannot have no_plugin: the generator refuses the pipeline"
)
MSG_AGENT_TAGS_DIND = (
    "agent_tags on a docker-in-docker AMD step: only native AMD steps (dind: false) take them; "
    "the generator refuses the pipeline"
)
MSG_NATIVE_MULTI_NODE = (
    "a native AMD step (dind: false) cannot run on several nodes: the generator refuses it"
)


@dataclass(frozen=True)
class AmdRoute:
    """Where an AMD step runs, or why the generator refuses it (``refusal``)."""

    label: str
    queue: str
    plugin: str | None
    gpus: int
    device: str
    num_devices: int | None
    num_nodes: int | None
    depends_on: tuple[str, ...]
    refusal: str | None = None


def is_amd_device(device: object, tables: RoutingTables) -> bool:
    return isinstance(device, str) and device in tables.amd_device_gpus


def amd_depends_on(depends_on: tuple[str, ...], tables: RoutingTables) -> tuple[str, ...]:
    """``image-build`` becomes the AMD image build, which is always there, first."""
    keys: list[str] = []
    for key in depends_on:
        renamed = tables.amd_image_build if key == tables.image_build_key else key
        if renamed not in keys:
            keys.append(renamed)
    if tables.amd_image_build not in keys:
        keys.insert(0, tables.amd_image_build)
    return tuple(keys)


def own_device_route(
    fields: Mapping[str, object], depends_on: tuple[str, ...], tables: RoutingTables
) -> AmdRoute:
    """A step whose own device is an AMD GPU device."""
    return _route(
        label=str(fields["label"]),
        device=str(fields["device"]),
        num_devices=_int(fields.get("num_devices")),
        num_nodes=_int(fields.get("num_nodes")),
        dind=fields.get("dind", True),
        no_plugin=fields.get("no_plugin") is True,
        no_gpu=fields.get("no_gpu") is True,
        depends_on=depends_on,
        display_label=None,
        tables=tables,
        agent_tags=bool(fields.get("agent_tags")),
    )


def mirror_route(
    fields: Mapping[str, object], amd: Mapping[str, object], tables: RoutingTables
) -> AmdRoute:
    """The ``mirror.amd`` copy of a step: the mirror's own settings, the step's for the rest."""
    count = next(
        (
            value
            for value in (amd.get("num_devices"), amd.get("num_gpus"), fields.get("num_devices"))
            if value is not None
        ),
        None,
    )
    label = amd.get("label")
    return _route(
        label=str(fields["label"]),
        device=str(amd.get("device")),
        num_devices=_int(count),
        num_nodes=_int(amd.get("num_nodes", fields.get("num_nodes"))),
        dind=amd.get("dind", True),
        no_plugin=amd.get("no_plugin") is True,
        no_gpu=amd.get("no_gpu", fields.get("no_gpu")) is True,
        depends_on=_keys(amd.get("depends_on")),
        display_label=label if isinstance(label, str) and label else None,
        tables=tables,
        agent_tags=bool(amd.get("agent_tags")),
    )


def _route(
    *,
    label: str,
    device: str,
    num_devices: int | None,
    num_nodes: int | None,
    dind: object,
    no_plugin: bool,
    no_gpu: bool,
    depends_on: tuple[str, ...],
    display_label: str | None,
    tables: RoutingTables,
    agent_tags: bool,
) -> AmdRoute:
    native = dind is False
    device_gpus = tables.amd_device_gpus.get(device)
    route = AmdRoute(
        label=display_label or tables.amd_label.format(label=label, device=device),
        queue=tables.device_queues.get(device, tables.default_queue),
        plugin=PLUGIN_KUBERNETES if native else None,
        gpus=0 if no_gpu or device_gpus is None else device_gpus,
        device=device,
        num_devices=num_devices,
        num_nodes=num_nodes,
        depends_on=amd_depends_on(depends_on, tables),
    )
    refusal = _refusal(route, device_gpus, dind, no_plugin, no_gpu)
    if refusal is None and agent_tags and dind is not False:
        refusal = MSG_AGENT_TAGS_DIND
    return route if refusal is None else AmdRoute(**{**route.__dict__, "refusal": refusal})


def _refusal(
    route: AmdRoute, device_gpus: int | None, dind: object, no_plugin: bool, no_gpu: bool
) -> str | None:
    if device_gpus is None:
        return MSG_UNKNOWN_AMD_DEVICE.format(device=route.device)
    if not isinstance(dind, bool):
        return MSG_AMD_DIND
    if dind is False and no_plugin:
        return MSG_NATIVE_NO_PLUGIN
    if dind is False and route.num_nodes is not None and route.num_nodes > 1:
        return MSG_NATIVE_MULTI_NODE
    if not no_gpu and route.num_devices is not None and route.num_devices != device_gpus:
        return MSG_AMD_COUNT.format(count=route.num_devices, device=route.device, gpus=device_gpus)
    return None


def _int(value: object) -> int | None:
    # The generator's model coerced the step's own fields; a mirror's are taken as written.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _keys(value: object) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    return ()
