"""Whose dashboard an issue is: the deployment that wrote it, read from its hidden marker.

A deployment is one database: its id is made the first time it writes a dashboard and
kept there (``bot.dashboard.deployment``). Every dashboard body carries the id of the
deployment that wrote it, beside the marker the bot finds its dashboard by. A second
deployment by mistake (its own, empty database, the same App) finds the production
dashboard by that marker; the id tells it the issue is not its own, and it leaves it
alone instead of blanking it. Pure: text in, a verdict out.

Bodies written before ids existed carry none. Such an issue belongs to the deployment
whose store records it (the one that wrote it, upgraded), and to no other.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Collection

from bot.dashboard.text import MARKER

DEPLOYMENT_MARKER = "<!-- followup-bot:deployment {id} -->"
# What FOLLOWUP_BOT_ADOPT_DASHBOARD names to take over a dashboard that carries no id.
UNMARKED = "unmarked"
WRITTEN_BY_NOBODY = "an earlier release (no deployment id)"

_DEPLOYMENT = re.compile(r"<!-- followup-bot:deployment ([A-Za-z0-9_-]{1,64}) -->")


class Verdict(enum.StrEnum):
    OURS = "ours"  # this deployment wrote it: keep it current
    ADOPT = "adopt"  # another's, taken over as the operator asked
    FOREIGN = "foreign"  # another deployment's: left alone


def stamp(body: str, deployment: str) -> str:
    """``body`` carrying ``deployment``'s id right after the dashboard marker."""
    line = DEPLOYMENT_MARKER.format(id=deployment)
    if MARKER in body:
        return body.replace(MARKER, f"{MARKER}\n{line}", 1)
    return f"{body}\n{line}\n"


def written_by(body: str) -> str | None:
    """The id of the deployment that wrote ``body`` (None: no id in it)."""
    found = _DEPLOYMENT.search(body)
    return found.group(1) if found else None


def writer_shown(writer: str | None) -> str:
    return WRITTEN_BY_NOBODY if writer is None else writer


def adoption_value(writer: str | None) -> str:
    """What FOLLOWUP_BOT_ADOPT_DASHBOARD must say to take over a dashboard of ``writer``."""
    return UNMARKED if writer is None else writer


def same_body(live: str, wanted: str) -> bool:
    """Whether the issue already shows ``wanted``: GitHub may hand a body back with CRLF
    line ends or without its last newline, which nobody sees, so neither counts."""
    return _normal(live) == _normal(wanted)


def _normal(text: str) -> str:
    return text.replace("\r\n", "\n").strip()


def verdict(
    live: str, *, ours: Collection[str], recorded: bool, adopt: str | None = None
) -> Verdict:
    """Whose the dashboard with body ``live`` is, for a deployment whose ids are ``ours``.

    ``recorded``: this deployment's store names this very issue as its dashboard.
    ``adopt``: the writer the operator asked this deployment to take the dashboard over
    from (FOLLOWUP_BOT_ADOPT_DASHBOARD), or None.
    """
    writer = written_by(live)
    if writer is not None and writer in ours:
        return Verdict.OURS
    if writer is None and recorded:
        # Written before ids existed (or its marker edited away) by this very store.
        return Verdict.OURS
    if adopt is not None and adopt == adoption_value(writer):
        return Verdict.ADOPT
    return Verdict.FOREIGN
