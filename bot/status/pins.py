"""A pin as the status page shows it, pure: its mode, its PR's state and their links.

The dashboard's row says what the bump flow last recorded; the page adds what the
pin's documents say besides. A PR is *merged* when the landing flow recorded its
merge (the pin's cooldown or the PR's landing document), or when the pin reached its
target while the PR was no longer open (a human merged it: the bot closes its own
PR with the outcome ``closed`` and remembers that it did); *closed* when the bot or a
human closed it; *open* otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.config.models import PinConfig
from bot.pins.state import Outcome, PinState
from bot.status import links
from bot.status.model import Linked, PinRow, PinStatus

OPEN, MERGED, CLOSED = "open", "merged", "closed"

ACTIVE = "active"
PAUSED = "paused"
WAITING = "waiting"
FAILING = "failing"
HUMAN_OWNED = "human-owned"
# The mode each last outcome puts the pin in (anything else: active).
MODE_BY_OUTCOME = {
    Outcome.PAUSED.value: PAUSED,
    Outcome.THROTTLED.value: WAITING,
    Outcome.COOLDOWN.value: WAITING,
    Outcome.FAILED.value: FAILING,
    Outcome.HUMAN_OWNED.value: HUMAN_OWNED,
}


def pin_status(
    repo: str,
    row: PinRow,
    bump: Mapping[str, Any] | None,
    *,
    paused: bool,
    landed_pr: int | None,
    merged_prs: frozenset[int],
    config: PinConfig | None,
) -> PinStatus:
    """``paused``: a ``pause`` command stands; ``landed_pr``: the PR the pin's cooldown
    names; ``merged_prs``: the PRs whose landing recorded a merge."""
    state = PinState.load(bump)
    upstream = config.upstream if config is not None else None
    return PinStatus(
        row=row,
        mode=pin_mode(row, state, paused=paused),
        pr_state=pr_state(state, landed_pr=landed_pr, merged_prs=merged_prs),
        pr=None if state.pr is None else Linked(f"#{state.pr}", links.pull(repo, state.pr)),
        pinned=_commit(upstream, row.pinned),
        upstream_head=_commit(upstream, row.upstream_head),
    )


def pin_mode(row: PinRow, state: PinState, *, paused: bool) -> str:
    if row.paused or paused:
        return PAUSED
    return MODE_BY_OUTCOME.get(state.last_result, ACTIVE)


def pr_state(state: PinState, *, landed_pr: int | None, merged_prs: frozenset[int]) -> str | None:
    number = state.pr
    if number is None:
        return None
    if number == landed_pr or number in merged_prs:
        return MERGED
    if state.extra.get("closed_by_bot") == number or state.last_result in (
        Outcome.CLOSED.value,
        Outcome.SKIPPED.value,
    ):
        return CLOSED
    if state.last_result == Outcome.CURRENT.value:
        return MERGED
    return OPEN


def _commit(upstream: str | None, value: str | None) -> Linked | None:
    if not value:
        return None
    return Linked(value, links.commit(upstream, value))
