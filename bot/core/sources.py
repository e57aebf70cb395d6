"""Which events each delivery source may speak, and the names handlers route on.

A delivery is trusted only as far as the secret that signed it. A body signed
with the Buildkite secret proves nothing about GitHub, so it must never reach
a GitHub handler (a forged ``issue_comment`` would be obeyed as a command, a
forged review would start landing), and the internal events the bot makes for
itself (reconcile ticks, per-repository syncs) must not be sayable by anyone
outside. Each source therefore has its own namespace of routed event names:

- GitHub: the ``X-GitHub-Event`` name as is (GitHub's names are lowercase
  words joined by ``_``, so they can never look like the other two).
- Buildkite: ``buildkite:`` + the ``X-Buildkite-Event`` name.
- internal: names under ``followup-bot.``, only from deliveries the bot made.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Source(StrEnum):
    GITHUB = "github"
    BUILDKITE = "buildkite"
    INTERNAL = "internal"


INTERNAL_PREFIX = "followup-bot."
BUILDKITE_PREFIX = "buildkite:"

RECONCILE_EVENT = INTERNAL_PREFIX + "reconcile"
SYNC_EVENT = INTERNAL_PREFIX + "sync"  # one repository's share of an upstream push

BUILD_FINISHED = BUILDKITE_PREFIX + "build.finished"
JOB_FINISHED = BUILDKITE_PREFIX + "job.finished"

_GITHUB_EVENT = re.compile(r"[a-z][a-z_]{0,63}")
_BUILDKITE_EVENT = re.compile(r"[a-z][a-z_]{0,31}(\.[a-z][a-z_]{0,31}){0,3}")
_INTERNAL_EVENT = re.compile(re.escape(INTERNAL_PREFIX) + r"[a-z][a-z_-]{0,31}")

REFUSED_EVENT = "{source} delivery named its event {event!r}, which that source cannot send"


def routed_event(source: str, event: str) -> str | None:
    """The name handlers are registered under, or None when ``source`` may not send ``event``."""
    if source == Source.GITHUB and _GITHUB_EVENT.fullmatch(event):
        return event
    if source == Source.BUILDKITE and _BUILDKITE_EVENT.fullmatch(event):
        return BUILDKITE_PREFIX + event
    if source == Source.INTERNAL and _INTERNAL_EVENT.fullmatch(event):
        return event
    return None
