"""What one pin's sync ends in and what the bot remembers about the pin.

``PinState`` is the pin's store document (its branch head, the target and the
pinned value it replaced, the write-ahead intent of a bump in progress, the
allowlist follow-ups it carries); ``Outcome`` and ``PinResult`` are what one
sync of the pin came to, as the commands, the dashboard and the logs show it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from bot.store.state_doc import StateDoc


class Outcome(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    CURRENT = "current"
    CLOSED = "closed"
    SKIPPED = "skipped"  # a human closed the PR for this very target
    HUMAN_OWNED = "human-owned"
    PAUSED = "paused"
    THROTTLED = "throttled"  # too many pushes for one upstream commit
    COOLDOWN = "cooldown"  # a bump of this pin landed a moment ago
    FAILED = "failed"  # could not decide; reason recorded, nothing written


SUCCESSES = frozenset(
    {Outcome.CREATED, Outcome.UPDATED, Outcome.UNCHANGED, Outcome.CURRENT, Outcome.CLOSED}
)


@dataclass(frozen=True)
class PinResult:
    pin: str
    outcome: Outcome
    detail: str = ""
    pr: int | None = None


@dataclass
class PinState(StateDoc):
    """What the bot remembers about one pin's branch (a store document)."""

    head: str | None = None
    pending: str | None = None
    target: str | None = None
    source: str | None = None  # the pinned value the bump commit replaced
    pr: int | None = None
    human_push_notified: bool = False
    # allowlist follow-ups this bump carries: pattern → narrower patterns ([] = delete)
    prunes: dict[str, list[str]] = field(default_factory=dict)
    # Write-ahead record of a bump in progress: {sha, target, source, base, pushed}.
    intent: dict[str, Any] | None = None
    last_result: str = ""
    last_failure: str | None = None
