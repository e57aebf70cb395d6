"""Invariants 2 to 5 of ci-routing.md, as non-fatal problems on routed steps.

Invariants 1 and 6 need the repo config (which steps need the CUDA build, which are required)
and 7 the registry: they are not checked here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from bot.routing.problems import RoutingProblem
from bot.routing.read import RawStep
from bot.routing.rules import PLUGIN_KUBERNETES
from bot.routing.tables import RoutingTables

if TYPE_CHECKING:
    from bot.routing.model import RoutedStep

MSG_UNKNOWN_FIELD = "unknown step field {field!r}: the generator drops it silently"
MSG_UNKNOWN_DEVICE = "unknown device {device!r}: the generator routes it to {queue}"
MSG_DEVICE_CASE = "unknown device {device!r} (device names are case-sensitive: {known!r}?)"
MSG_L4_DEVICES = "device {device!r} needs an explicit num_devices from 1 to {most}"
MSG_L4_NO_PLUGIN = "device {device!r} with no_plugin: the step would get no pod"
MSG_MULTI_NODE_KUBERNETES = "a multi-node step on Kubernetes queue {queue}: it gets no pod"
MSG_KUBERNETES_NO_POD = "on Kubernetes queue {queue} without the kubernetes plugin"
MSG_DUPLICATE_STEP_KEY = "duplicate step key {key!r} (first in {file}:{line})"
MSG_UNKNOWN_DEPENDENCY = "depends_on {key!r}: no step has this key"
MSG_NO_PRODUCER = "pulls image suffix {suffix!r}, which no build step produces"
MSG_NOT_AFTER_PRODUCER = "pulls image suffix {suffix!r} but does not depend on {producer!r}"


def _at(raw: RawStep, name: str | None, message: str) -> RoutingProblem:
    where = raw.positions.get(name or "")
    line, column = (where.line, where.column) if where else (raw.line, raw.column)
    return RoutingProblem(raw.file, line, column, message)


def step_problems(step: RoutedStep, raw: RawStep, tables: RoutingTables) -> list[RoutingProblem]:
    """The rules one step of a job file breaks."""
    problems = [
        RoutingProblem(raw.file, where.line, where.column, MSG_UNKNOWN_FIELD.format(field=name))
        for name, where in raw.unknown
    ]
    problems.extend(_at(raw, None, message) for message in _kubernetes_problems(step, tables))
    device_problem = _device_problem(step, tables)
    if device_problem is not None:
        problems.append(_at(raw, "device", device_problem))
    return problems


def _device_problem(step: RoutedStep, tables: RoutingTables) -> str | None:
    known = tables.known_devices()
    if step.device is None or step.device in known:
        return None
    for name in sorted(known):
        if name.lower() == step.device.lower():
            return MSG_DEVICE_CASE.format(device=step.device, known=name)
    return MSG_UNKNOWN_DEVICE.format(device=step.device, queue=step.queue)


def _kubernetes_problems(step: RoutedStep, tables: RoutingTables) -> Iterator[str]:
    size = tables.pod_sizes.get(step.device or "")
    if size is not None:
        most = size.gpus_per_node
        if step.num_devices is None or not 1 <= step.num_devices <= most:
            yield MSG_L4_DEVICES.format(device=step.device, most=most)
    kubernetes_queues = {
        tables.device_queues[device]
        for device in tables.kubernetes_devices
        if device in tables.device_queues
    }
    if step.queue not in kubernetes_queues or step.plugin == PLUGIN_KUBERNETES:
        return
    if step.multi_node:
        yield MSG_MULTI_NODE_KUBERNETES.format(queue=step.queue)
    elif step.device in tables.pod_sizes:
        yield MSG_L4_NO_PLUGIN.format(device=step.device)
    else:
        yield MSG_KUBERNETES_NO_POD.format(queue=step.queue)


def cross_step_problems(steps: Sequence[RoutedStep], tables: RoutingTables) -> list[RoutingProblem]:
    """Unique keys, existing dependencies, and each image's producer among the dependencies."""
    first: dict[str, RoutedStep] = {}
    problems: list[RoutingProblem] = []
    for step in steps:
        if step.key in first:
            seen = first[step.key]
            message = MSG_DUPLICATE_STEP_KEY.format(key=step.key, file=seen.file, line=seen.line)
            problems.append(RoutingProblem(step.file, step.line, 1, message))
        else:
            first[step.key] = step
    for step in steps:
        problems.extend(
            RoutingProblem(step.file, step.line, 1, MSG_UNKNOWN_DEPENDENCY.format(key=key))
            for key in step.depends_on
            if key not in first and step.mirror_of is None
        )
        producer = _producer_problem(step, tables)
        if producer is not None:
            problems.append(RoutingProblem(step.file, step.line, 1, producer))
    return problems


def _producer_problem(step: RoutedStep, tables: RoutingTables) -> str | None:
    if step.image_suffix is None:
        return None
    producer = tables.producers.get(step.image_suffix)
    if producer is None:
        return MSG_NO_PRODUCER.format(suffix=step.image_suffix)
    if producer not in step.depends_on:
        return MSG_NOT_AFTER_PRODUCER.format(suffix=step.image_suffix, producer=producer)
    return None
