"""Invariants 1 and 6 of the routing rules, which need the repository's word on which
steps need the CUDA build (by key, or by a command pattern): such a step pulls a CUDA
image (no ``-cpu``/``-arm64``), on a GPU queue with a plugin, after ``image-build``,
and is neither ``soft_fail`` nor ``optional`` (incident A broke the first of these)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from bot.routing.model import RoutedStep
from bot.routing.problems import RoutingProblem
from bot.routing.tables import RoutingTables

MSG_OFF_CUDA_IMAGE = (
    "{key} needs the CUDA build but pulls {image}: for docker steps the device's queue "
    "decides the image ({queue})"
)
MSG_NO_GPU = "{key} needs the CUDA build but runs on {queue} with {gpus} GPUs"
MSG_NO_PLUGIN = "{key} needs the CUDA build but runs with no plugin (no image at all)"
MSG_NOT_AFTER_BUILD = "{key} needs the CUDA build but does not depend on {producer}"
MSG_NOT_REQUIRED = "{key} is required but marked {flag}: a failure would not stop the build"
NO_IMAGE = "no commit image"


def needs_cuda(step: RoutedStep, keys: Sequence[str], commands: Sequence[str]) -> bool:
    return step.key in keys or any(
        re.search(pattern, command) for pattern in commands for command in step.commands
    )


def required_problems(
    steps: Sequence[RoutedStep],
    tables: RoutingTables,
    *,
    keys: Sequence[str],
    commands: Sequence[str],
) -> list[RoutingProblem]:
    """What each step that needs the CUDA build breaks of invariants 1 and 6."""
    return [
        RoutingProblem(step.file, line, 1, message)
        for step in steps
        if step.mirror_of is None and needs_cuda(step, keys, commands)
        for line, message in _messages(step, tables)
    ]


def _messages(step: RoutedStep, tables: RoutingTables) -> Iterator[tuple[int, str]]:
    """(line, message) for each rule broken; the queue and image ones at the ``device``
    line when there is one, since the device decides both."""
    cuda = tables.producers.get("", "image-build")
    routed_at = step.device_line or step.line
    if step.plugin is None:
        yield step.line, MSG_NO_PLUGIN.format(key=step.key)
    elif step.image_suffix is None or tables.producers.get(step.image_suffix) != cuda:
        image = NO_IMAGE if step.image_suffix is None else f"the {step.image_suffix!r} image"
        yield routed_at, MSG_OFF_CUDA_IMAGE.format(key=step.key, image=image, queue=step.queue)
    if step.gpus < 1:
        yield routed_at, MSG_NO_GPU.format(key=step.key, queue=step.queue, gpus=step.gpus)
    if cuda not in step.depends_on:
        yield step.line, MSG_NOT_AFTER_BUILD.format(key=step.key, producer=cuda)
    for flag in ("soft_fail", "optional"):
        if getattr(step, flag):
            yield step.line, MSG_NOT_REQUIRED.format(key=step.key, flag=flag)
