"""Which commit images a build pulls, who pulls each, and which step should have built it.

Pure: the routing model's steps in, one row per image out. The producer of an image is
the step the repository's tables name for its suffix (``""`` ← ``image-build``, ``-cpu``
← ``image-build-cpu``...). A lane suffix the tables do not name (``-torch-nightly-cpu``)
is made by the producer of its device part: the nightly lane runs the same builds with
``TORCH_NIGHTLY=1``, which is exactly what went wrong in incident B when the CPU build
pushed its stable tag instead. That stable tag is the image's *counterpart*: when a
nightly image is missing and its counterpart exists, the producer built the wrong tag.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from bot.routing.model import Routes
from bot.routing.tables import RoutingTables


@dataclass(frozen=True)
class ConsumedImage:
    image: str  # registry/repository:tag, as the steps pull it
    suffix: str  # the tag's suffix after the commit ("", "-cpu", "-torch-nightly-cpu"...)
    consumers: tuple[str, ...]  # step keys, in pipeline order
    producer: str | None  # the step key that should build it; None: the tables name none
    counterpart: str | None = None  # the same image without the nightly part


def producer_of(suffix: str, tables: RoutingTables) -> str | None:
    """The step that builds images with ``suffix``: named by the tables, else the producer
    of the suffix without its nightly part."""
    found = tables.producers.get(suffix)
    if found is not None:
        return found
    stable = _without_nightly(suffix, tables)
    return tables.producers.get(stable) if stable != suffix else None


def _without_nightly(suffix: str, tables: RoutingTables) -> str:
    return suffix.replace(tables.nightly_suffix, "", 1) if tables.nightly_suffix else suffix


def consumed_images(
    routes: Routes, tables: RoutingTables, *, ran: Collection[str] | None = None
) -> tuple[ConsumedImage, ...]:
    """Every commit image the steps pull, in the order the pipeline first pulls them.

    ``ran``: the step keys the build really had (its jobs); a step the build did not run
    pulls nothing. None: every routed step counts (a build whose jobs are not known).
    """
    consumers: dict[str, list[str]] = {}
    suffixes: dict[str, str] = {}
    for step in routes.steps:
        if step.image is None or step.image_suffix is None:
            continue
        if ran is not None and step.key not in ran:
            continue
        consumers.setdefault(step.image, []).append(step.key)
        suffixes[step.image] = step.image_suffix
    return tuple(
        ConsumedImage(
            image=image,
            suffix=suffixes[image],
            consumers=tuple(keys),
            producer=producer_of(suffixes[image], tables),
            counterpart=_counterpart(image, suffixes[image], tables),
        )
        for image, keys in consumers.items()
    )


def _counterpart(image: str, suffix: str, tables: RoutingTables) -> str | None:
    stable = _without_nightly(suffix, tables)
    if stable == suffix or not image.endswith(suffix):
        return None
    return image[: len(image) - len(suffix)] + stable
