"""Pushing a bump: building the commit, recording the write-ahead intent, moving
the branch and counting the push.

Before the ref moves, the bot records its *intent*: the commit it built and
what for. A rerun after a crash or a lost answer finds the intent
(``resumable``) and finishes with the same commit instead of building another,
so it never pushes twice. A push is counted once it is confirmed, so failed
attempts never throttle a pin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.config.models import PinConfig
from bot.github import bot_branches, changes
from bot.github.changes import BranchHead, FileEdit
from bot.pins import text as bump_text
from bot.pins.facts import BumpScope, PinFacts
from bot.pins.state import PinState
from bot.store.kinds import Kind, pin_key


def resumable(
    state: PinState, target: str, facts: PinFacts, base: BranchHead
) -> dict[str, Any] | None:
    """The unfinished bump to finish rather than rebuild: same target, pin and base."""
    intent = state.intent
    if intent is None or intent.get("target") != target or intent.get("source") != facts.pinned:
        return None
    if intent.get("base") != base.sha or not isinstance(intent.get("sha"), str):
        return None
    return intent


async def push_bump(
    ctx: BumpScope,
    pin: PinConfig,
    state: PinState,
    facts: PinFacts,
    target: str,
    *,
    edits: Sequence[FileEdit],
    text: bump_text.BumpText,
    branch: str,
) -> str:
    """Put the bump commit for ``target`` on ``branch`` (built now, or the one an
    unfinished run recorded) and return its sha."""
    key = pin_key(ctx.repo.full_name, pin.name)
    intent = resumable(state, target, facts, ctx.base)
    resumed = intent is not None
    if intent is None:
        sha = await build_commit(ctx, pin, state, edits, text)
        intent = {
            "sha": sha,
            "target": target,
            "source": facts.pinned,
            "base": ctx.base.sha,
            "pushed": False,
        }
        # Recorded before the ref moves: a rerun finishes with this very commit.
        state.intent, state.extra["base"] = intent, ctx.base.sha
        await ctx.store.put_state(Kind.BUMP, key, state.dump())
    sha = str(intent["sha"])
    await bot_branches.move_branch(ctx.gh, ctx.repo, branch, sha, facts.open_pr, resumed=resumed)
    if not intent["pushed"]:
        # Counted once the push is confirmed, so failed attempts never throttle a pin.
        pushes = dict(state.extra.get("pushes") or {})
        pushes[target] = int(pushes.get(target, 0)) + 1
        state.extra["pushes"], intent["pushed"] = pushes, True
        await ctx.store.put_state(Kind.BUMP, key, state.dump())
    return sha


async def build_commit(
    ctx: BumpScope,
    pin: PinConfig,
    state: PinState,
    edits: Sequence[FileEdit],
    text: bump_text.BumpText,
) -> str:
    """The bump commit on the base: the pin and its companions (and the prune commit it
    carries, on top)."""
    entries = await changes.tree_entries(ctx.gh, ctx.repo, list(edits))
    commit = await changes.commit_tree(
        ctx.gh, ctx.repo, base=ctx.base, entries=entries, message=text.commit_message
    )
    if state.prunes and ctx.replay_prunes is not None:
        # The allowlist follow-ups this bump carried survive the rebuild, as their
        # own commit on top (if the entries are still there on the new base).
        pruned = await ctx.replay_prunes(
            ctx, commit, state.prunes, pin.name, text.trailers, ctx.base.sha
        )
        if pruned is not None:
            state.extra["prune_base"] = commit.sha
            commit = pruned
    return commit.sha
