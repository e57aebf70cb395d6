"""The wording of a lane's one issue for its steps that could not pull their image (see
``bot.main_red.lane_images``): the title, the body with the registry's table, the closing
comment and their markers. Pure: text in, text out."""

from __future__ import annotations

from collections.abc import Sequence

from bot.github import neutralise
from bot.main_red.lanes import REGULAR, Lane
from bot.main_red.text import lane_line, lane_mark, on_main, short

# One issue for a lane whose red steps all failed pulling their image.
IMAGES_TITLE = "Images missing {on_main} since build {number}"
IMAGES_INTRO = (
    "Every step that failed in build {build} ({commit7}) of pipeline `{pipeline}`{lane} "
    "could not pull its image: {steps}. One cause, so one issue rather than one per step; "
    "the registry's answer for every image the build pulls:"
)
IMAGES_LANE = ", lane `{lane}`"
IMAGES_OUTRO = "The issue is closed once those steps pass again in a build of this lane."
MARKER_IMAGES = "<!-- followup-bot:images-missing pipeline={pipeline} since={since}{lane} -->"
COMMENT_IMAGES_GREEN = (
    "The steps that could not pull their image passed again {on_main} in build {build} "
    "({commit7}). Closing."
)
MARKER_IMAGES_GREEN = "<!-- followup-bot:images-found pipeline={pipeline} since={since}{lane} -->"


def images_title(since: int, lane: Lane = REGULAR) -> str:
    return IMAGES_TITLE.format(on_main=on_main(lane), number=f"#{since}")


def images_marker(pipeline: str, since: int, lane: Lane = REGULAR) -> str:
    return MARKER_IMAGES.format(pipeline=pipeline, since=since, lane=lane_mark(lane))


def images_green_marker(pipeline: str, since: int, lane: Lane = REGULAR) -> str:
    return MARKER_IMAGES_GREEN.format(pipeline=pipeline, since=since, lane=lane_mark(lane))


def images_body(
    *,
    pipeline: str,
    lane: Lane,
    build: int,
    commit: str,
    steps: Sequence[str],
    table: str,
    since: int,
) -> str:
    """The lane's one issue for its steps that could not pull their image."""
    intro = IMAGES_INTRO.format(
        build=f"#{build}",
        commit7=short(commit),
        pipeline=pipeline,
        lane="" if lane.regular else IMAGES_LANE.format(lane=lane.name),
        steps=", ".join(f"`{neutralise.inline(step)}`" for step in steps),
    )
    parts = [intro, table, IMAGES_OUTRO]
    if not lane.regular:
        parts.insert(0, lane_line(lane))
    return "\n\n".join([*parts, images_marker(pipeline, since, lane)])
