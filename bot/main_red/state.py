"""What the bot remembers of one step on main (a store document per pipeline, lane and
step; the regular lane's keys are those of before lanes, so old documents read as its).

An *episode* is one red streak, named by its first red build. Each follow-up of an
episode is recorded once the server confirmed it, and looked for (by its marker or its
branch) before it is written again: a rerun after a crash finishes its own work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.context.scope import RepoScope
from bot.store.kinds import Kind, signal_key
from bot.store.state_doc import StateDoc


@dataclass
class SignalDoc(StateDoc):
    state: str = "green"  # the last judged SignalState
    reason: str = ""
    since: int | None = None  # the episode's first red build
    last_green: int | None = None
    culprit: str | None = None  # the culprit commit, when there is one
    issue: int | None = None
    comment_posted: bool = False  # on the culprit's PR
    revert_pr: int | None = None
    revert_head: str | None = None
    # Write-ahead record of the revert commit being pushed: {sha, base, digest}.
    revert_intent: dict[str, Any] | None = None
    revert_note: str | None = None  # why there is no revert PR
    # Every follow-up of the episode written: set last, so a run killed half-way (an issue
    # but no revert yet) is finished by the next one instead of taken for done.
    complete: bool = False
    closed: bool = False  # the episode ended (green again) and its follow-ups closed
    checked_build: int | None = None  # the newest build judged


async def load(ctx: RepoScope, pipeline: str, step: str, lane: str = "") -> SignalDoc:
    """``lane`` is the lane's tag: empty for the regular lane."""
    found = await ctx.store.get_state(Kind.MAIN_SIGNAL, signal_key(ctx.repo, pipeline, step, lane))
    return SignalDoc.load(found)


async def save(ctx: RepoScope, pipeline: str, step: str, doc: SignalDoc, lane: str = "") -> None:
    key = signal_key(ctx.repo, pipeline, step, lane)
    await ctx.store.put_state(Kind.MAIN_SIGNAL, key, doc.dump())
