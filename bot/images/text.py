"""The registry table: tag → HTTP status → the steps that pull it → the step that should
build it. Pure; the same table on the red-on-main issue, the retry comment, the landing
comment and the dashboard."""

from __future__ import annotations

from collections.abc import Sequence

from bot.github import neutralise
from bot.images.model import ImageCheck, ImageRow

TABLE_HEAD = "| tag | registry | pulled by | built by |\n|---|---|---|---|"
ROW = "| `{tag}` | {status} | {consumers} | {producer} |"
NO_PRODUCER = "no step (the tables name none)"
COUNTERPART = "— (the stable tag of `{of}`)"
SUMMARY_MISSING = (
    "{count} image{s} that build {build} pulls {are} not in the registry: "
    "the steps pulling {them} cannot run, and a retry pulls the same tag."
)
SUMMARY_WRONG_TAG = "`{producer}` pushed `{counterpart}` instead of `{tag}`."
SUMMARY_ALL_THERE = "Every image that build {build} pulls is in the registry."
SUMMARY_UNKNOWN = "The registry did not say whether {count} image{s} exist{v}: {why}."
NO_IMAGES = "Build {build} pulls no commit image."
MAX_CONSUMERS_SHOWN = 4


def _consumers(keys: Sequence[str]) -> str:
    shown = ", ".join(f"`{key}`" for key in keys[:MAX_CONSUMERS_SHOWN])
    more = len(keys) - MAX_CONSUMERS_SHOWN
    return shown + (f" (+{more} more)" if more > 0 else "")


def row(item: ImageRow) -> str:
    consumers = (
        COUNTERPART.format(of=item.counterpart_of)
        if item.counterpart_of is not None
        else _consumers(item.consumers)
    )
    producer = f"`{item.producer}`" if item.producer else NO_PRODUCER
    return ROW.format(
        tag=item.tag, status=neutralise.inline(item.status), consumers=consumers, producer=producer
    )


def image_table(check: ImageCheck) -> str:
    """The summary lines, then the table (images found first, as the registry answered)."""
    build = f"#{check.build_number}"
    if not check.rows:
        return NO_IMAGES.format(build=build)
    missing = [r for r in check.rows if r.exists is False and r.counterpart_of is None]
    unknown = [r for r in check.rows if r.exists is None]
    lines = []
    if missing:
        n = len(missing)
        lines.append(
            SUMMARY_MISSING.format(
                count=n,
                s="" if n == 1 else "s",
                build=build,
                are="is" if n == 1 else "are",
                them="it" if n == 1 else "them",
            )
        )
        for item in missing:
            found = next((r for r in check.rows if r.counterpart_of == item.tag and r.exists), None)
            if found is not None and item.producer:
                lines.append(
                    SUMMARY_WRONG_TAG.format(
                        producer=item.producer, counterpart=found.tag, tag=item.tag
                    )
                )
    elif not unknown:
        lines.append(SUMMARY_ALL_THERE.format(build=build))
    if unknown:
        n = len(unknown)
        lines.append(
            SUMMARY_UNKNOWN.format(
                count=n, s="" if n == 1 else "s", v="s" if n == 1 else "", why=unknown[0].status
            )
        )
    table = TABLE_HEAD + "\n" + "\n".join(row(item) for item in check.rows)
    return " ".join(lines) + "\n\n" + table
