"""The dashboard's "Main" section: the steps broken on main with their issue and revert PR,
and the registry's answer for the last build whose images were checked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.github import neutralise
from bot.images.model import ImageCheck
from bot.images.text import image_table

HEADING_MAIN = "## Main"
RED_HEADER = "| step | red since | issue | partial revert |\n|---|---|---|---|"
RED_ROW = "| `{step}` | {since} | {issue} | {revert} |"
ALL_GREEN = "No step is broken on main."
HEADING_IMAGES = "### Images of the last checked build"
IMAGES_INTRO = "Build #{build} ({branch} at `{commit7}`{lane}), checked {when}:"
NIGHTLY_LANE = ", torch nightly"
IMAGES_PROBLEM = "Build #{build} could not be checked: {problem}"
NOT_YET = "-"


@dataclass(frozen=True)
class RedRow:
    step: str
    since: int | None
    issue: int | None
    revert_pr: int | None


@dataclass(frozen=True)
class MainSection:
    red: tuple[RedRow, ...]
    images: ImageCheck | None


def render_main(section: MainSection, *, when: str) -> list[str]:
    parts = [HEADING_MAIN]
    if section.red:
        rows = [
            RED_ROW.format(
                step=neutralise.inline(row.step),
                since=f"build #{row.since}" if row.since is not None else NOT_YET,
                issue=f"#{row.issue}" if row.issue is not None else NOT_YET,
                revert=f"#{row.revert_pr}" if row.revert_pr is not None else NOT_YET,
            )
            for row in section.red
        ]
        parts.append(RED_HEADER + "\n" + "\n".join(rows))
    else:
        parts.append(ALL_GREEN)
    check = section.images
    if check is not None:
        parts.append(HEADING_IMAGES)
        if check.problem is not None:
            parts.append(IMAGES_PROBLEM.format(build=check.build_number, problem=check.problem))
        else:
            lane = NIGHTLY_LANE if check.nightly else ""
            parts.append(
                IMAGES_INTRO.format(
                    build=check.build_number,
                    branch=neutralise.inline(check.branch),
                    commit7=check.commit[:7],
                    lane=lane,
                    when=when,
                )
            )
            parts.append(image_table(check))
    return parts


def red_rows(docs: Sequence[tuple[str, dict[str, object]]]) -> tuple[RedRow, ...]:
    """Broken steps from their signal documents, keyed ``<pipeline>/<step>``."""
    rows = []
    for step, doc in sorted(docs):
        if doc.get("state") != "broken":
            continue
        rows.append(
            RedRow(step, _int(doc.get("since")), _int(doc.get("issue")), _int(doc.get("revert_pr")))
        )
    return tuple(rows)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
