"""A migration PR's writes: the commit with its write-ahead intent, the branch move, the PR
opened (never two) or closed, and whose the branch is.

As for a pin's bump: before the branch moves, the commit built and what for (base and
edits digest) are recorded; a rerun after a crash or a lost answer finishes with that
very commit instead of building another. A branch whose head the bot neither
remembers nor recognises by its trailers and committer is a human's, and left alone.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.context.scope import RepoScope
from bot.github import bot_branches, changes, effects
from bot.github.bot_branches import bots_commit_trailers
from bot.github.changes import BranchHead, FileEdit
from bot.routing_check import migrate_text as text
from bot.routing_check.sweep import SweepPlan
from bot.store.kinds import Kind, migration_key
from bot.store.state_doc import StateDoc


class Outcome(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"  # the branch holds these very edits
    NOTHING_TO_MOVE = "nothing-to-move"
    CLOSED = "closed"  # nothing left to move: the bot's PR closed
    SKIPPED = "skipped"  # a human closed the PR for these very edits
    HUMAN_OWNED = "human-owned"
    FAILED = "failed"  # the sweep is not proven: nothing written, reason recorded


@dataclass(frozen=True)
class MigrationResult:
    name: str
    outcome: Outcome
    detail: str = ""
    pr: int | None = None


@dataclass
class MigrationState(StateDoc):
    """What the bot remembers about one migration's branch (a store document)."""

    head: str | None = None
    digest: str | None = None  # the edits the branch head holds
    pr: int | None = None
    # Write-ahead record of a push in progress: {sha, base, digest}.
    intent: dict[str, Any] | None = None
    closed_by_bot: int | None = None
    last_result: str = ""
    last_failure: str | None = None
    steps_left: int | None = None  # steps the sweep would still move (the dashboard's)


@dataclass(frozen=True)
class Sweep:
    """One migration's planned sweep on one base."""

    name: str
    plan: SweepPlan
    base: BranchHead
    digest: str

    @property
    def branch(self) -> str:
        return text.migration_branch(self.name)


async def save(ctx: RepoScope, sweep: Sweep, state: MigrationState) -> None:
    await ctx.store.put_state(Kind.MIGRATION, migration_key(ctx.repo, sweep.name), state.dump())


async def owned(
    ctx: RepoScope, sweep: Sweep, state: MigrationState, open_pr: Mapping[str, Any]
) -> bool:
    """Whether the open PR's head is the bot's (recovering what it holds if forgotten)."""
    head = str(open_pr["head"]["sha"])
    if head == (state.intent or {}).get("sha") or head == state.head:
        return True
    # A head the bot does not remember (a new store, a crash, a human push): the
    # commit itself says whose it is.
    trailers = await bots_commit_trailers(ctx.gh, ctx.repo, head, ctx.bot_login)
    if trailers is None or trailers.get(text.TRAILER_MIGRATION) != sweep.name:
        return False
    state.head, state.digest = head, trailers.get(text.TRAILER_EDITS)
    return True


async def human_owned(ctx: RepoScope, sweep: Sweep, open_pr: Mapping[str, Any]) -> MigrationResult:
    """Leave a human's branch alone, saying so once per head."""
    number, head = int(open_pr["number"]), str(open_pr["head"]["sha"])
    body = text.COMMENT_HUMAN_PUSH.format(branch=sweep.branch, head7=text.short(head))
    marker = text.MARKER_HUMAN_PUSH.format(name=sweep.name, head=head)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    return MigrationResult(sweep.name, Outcome.HUMAN_OWNED, "not force-pushing", number)


async def close_done(
    ctx: RepoScope, sweep: Sweep, state: MigrationState, open_pr: Mapping[str, Any]
) -> MigrationResult:
    """Nothing is left to move: say so once on the bot's PR and close it."""
    number = int(open_pr["number"])
    body = text.COMMENT_DONE.format(name=sweep.name, base7=text.short(sweep.base.sha))
    await effects.post_once(
        ctx.gh, ctx.store, ctx.repo, number, body, text.MARKER_DONE.format(name=sweep.name)
    )
    # Recorded before the close: a crash after it must not read as a human's close.
    state.intent, state.closed_by_bot = None, number
    await save(ctx, sweep, state)
    await changes.update_pull(ctx.gh, ctx.repo, number, state="closed")
    return MigrationResult(sweep.name, Outcome.CLOSED, "nothing left to move", number)


async def push_sweep(
    ctx: RepoScope, sweep: Sweep, state: MigrationState, open_pr: Mapping[str, Any] | None
) -> str:
    """Put the sweep commit on the branch (built now, or the one an unfinished run
    recorded) and return its sha."""
    resumed = bot_branches.resumable(state.intent, digest=sweep.digest, base=sweep.base.sha)
    if resumed is None:
        sha = await _build_commit(ctx, sweep)
        # Recorded before the ref moves: a rerun finishes with this very commit.
        state.intent = {"sha": sha, "base": sweep.base.sha, "digest": sweep.digest}
        await save(ctx, sweep, state)
    sha = str((state.intent or {})["sha"])
    await bot_branches.move_branch(
        ctx.gh, ctx.repo, sweep.branch, sha, open_pr, resumed=resumed is not None
    )
    return sha


async def _build_commit(ctx: RepoScope, sweep: Sweep) -> str:
    edits = [FileEdit(path, new.encode()) for path, (_old, new) in sorted(sweep.plan.edits.items())]
    entries = await changes.tree_entries(ctx.gh, ctx.repo, edits)
    message = text.commit_message(sweep.name, sweep.plan, sweep.digest)
    commit = await changes.commit_tree(
        ctx.gh, ctx.repo, base=sweep.base, entries=entries, message=message
    )
    return commit.sha


async def open_pull(ctx: RepoScope, sweep: Sweep, sha: str, *, title: str, body: str) -> int:
    """Open the migration PR at ``sha`` and return its number (never a second one)."""
    return await bot_branches.open_pull(
        ctx.gh,
        ctx.repo,
        branch=sweep.branch,
        base=sweep.base.name,
        sha=sha,
        title=title,
        body=body,
    )
