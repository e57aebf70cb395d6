"""When an approval stops standing: a new head, changes requested, a dismissed review."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gidgethub

from bot.context.scope import RepoScope
from bot.github import effects
from bot.landing import text as landing_text
from bot.landing.state import (
    Landing,
    LandingOutcome,
    LandingState,
    load_state,
    log,
    pr_lock,
    read_pull,
    save_state,
)

DISABLE_AUTO_MERGE = """
mutation($pr: ID!) {
  disablePullRequestAutoMerge(input: {pullRequestId: $pr}) {
    pullRequest { number }
  }
}
"""


async def on_new_head(ctx: RepoScope, number: int) -> Landing:
    """The PR's head moved (the bump flow updated it): an approval of the old head is void."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await load_state(ctx, number)
        if state.approved_head is None:
            return Landing(LandingOutcome.NOT_APPROVED)
        pull = await read_pull(ctx, number)
        head = str(pull["head"]["sha"])
        if head == state.approved_head or pull["state"] != "open":
            return Landing(LandingOutcome.APPROVAL_STANDS)
        return await void_approval(ctx, number, state, head, pull)


async def on_changes_requested(ctx: RepoScope, number: int, login: str) -> Landing:
    """A reviewer asked for changes: an approval the bot was landing on no longer stands."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await load_state(ctx, number)
        old = state.approved_head
        if old is None:
            return Landing(LandingOutcome.NOT_APPROVED)
        body = landing_text.STOPPED_FOR_CHANGES.format(login=login, approved7=old[:7])
        await _withdraw(ctx, number, state, body, landing_text.MARKER_CHANGES.format(head=old))
        return Landing(LandingOutcome.CHANGES_REQUESTED, f"by {login} at {old[:7]}")


async def on_dismissed(ctx: RepoScope, number: int, review_id: int, login: str) -> Landing:
    """An approval was dismissed: if it is the one the bot is landing on, stop."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await load_state(ctx, number)
        old = state.approved_head
        if old is None or state.review_id != review_id:
            return Landing(LandingOutcome.NOT_THE_APPROVAL)
        body = landing_text.STOPPED_FOR_DISMISSAL.format(login=login, approved7=old[:7])
        marker = landing_text.MARKER_DISMISSED.format(review=review_id)
        await _withdraw(ctx, number, state, body, marker)
        return Landing(LandingOutcome.DISMISSED, f"by {login} at {old[:7]}")


async def _withdraw(
    ctx: RepoScope, number: int, state: LandingState, body: str, marker: str
) -> None:
    """The approval no longer stands: forget it (auto-merge off too), then say so once."""
    old = state.approved_head
    state.approved_head = None
    if old is not None and state.auto_merge_for == old:
        state.auto_merge_for = None
        await disable_auto_merge(ctx, number, await read_pull(ctx, number))
    await save_state(ctx, number, state)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)


async def void_approval(
    ctx: RepoScope, number: int, state: LandingState, head: str, pull: Mapping[str, Any]
) -> Landing:
    old = state.approved_head
    state.approved_head = None
    if old is not None and state.auto_merge_for == old:
        # GitHub keeps auto-merge on after a push by someone with write access (the bot).
        state.auto_merge_for = None
        await disable_auto_merge(ctx, number, pull)
    if state.reapproval_for == head:
        await save_state(ctx, number, state)
        return Landing(LandingOutcome.REAPPROVAL_REQUESTED, "already")
    state.reapproval_for = head
    body = landing_text.REAPPROVAL_NEEDED.format(head7=head[:7], approved7=str(old or "?")[:7])
    marker = landing_text.MARKER_REAPPROVE.format(head=head)
    # Posted before the state says so: a failed post is retried, not forgotten.
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    await save_state(ctx, number, state)
    return Landing(LandingOutcome.REAPPROVAL_REQUESTED, f"{str(old)[:7]} void at {head[:7]}")


async def disable_auto_merge(ctx: RepoScope, number: int, pull: Mapping[str, Any]) -> None:
    if not pull.get("auto_merge"):
        return  # GitHub turned it off already
    try:
        await ctx.gh.graphql(DISABLE_AUTO_MERGE, pr=str(pull["node_id"]))
    except gidgethub.GraphQLException as exc:
        log.warning("%s#%d: auto-merge not disabled: %s", ctx.repo.full_name, number, exc)
