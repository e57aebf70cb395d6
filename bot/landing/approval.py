"""An approving review on a bot bump PR: who may approve, which head, which paths; then land."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.context.scope import RepoScope
from bot.github import changes, effects
from bot.github.bot_branches import proposal_key
from bot.github.permissions import has_write, permission_level
from bot.landing import text as landing_text
from bot.landing.flow import advance_locked
from bot.landing.rules import (
    CODEOWNERS_PATHS,
    OwnerRule,
    approved_at_head,
    parse_codeowners,
    paths_not_owned_by,
    paths_outside,
    touched_paths,
)
from bot.landing.state import (
    Approval,
    Landing,
    LandingOutcome,
    LandingState,
    load_state,
    pr_lock,
    read_pull,
    save_state,
)


async def on_approval(ctx: RepoScope, approval: Approval) -> Landing:
    """An approving review was submitted on a bot bump PR; returns a line for the log."""
    async with ctx.locks.hold(pr_lock(ctx.repo, approval.number)):
        pull = await read_pull(ctx, approval.number)
        if pull["state"] != "open":
            return Landing(LandingOutcome.NOT_OPEN)
        head = str(pull["head"]["sha"])
        files = [
            entry
            async for entry in ctx.gh.getiter(
                "/repos/{owner}/{repo}/pulls/{number}/files{?per_page}",
                url_vars=ctx.repo.vars(number=str(approval.number), per_page="100"),
            )
        ]
        paths = touched_paths(files)
        refusal = await _refusal(ctx, approval, head, paths)
        if refusal is not None:
            reason, next_step = refusal
            await _refuse_once(ctx, approval, reason, next_step)
            return Landing(LandingOutcome.REFUSED, reason)
        state = await load_state(ctx, approval.number)
        if state.stopped_for == head:
            return Landing(LandingOutcome.LEFT_TO_HUMANS)
        state.pin = proposal_key(str(pull["head"]["ref"])) or ""
        state.approved_head, state.approved_by = head, approval.login
        state.review_id = approval.review_id
        labelled = await _add_missing_labels(ctx, pull, state)
        return await advance_locked(ctx, approval.number, state, labelled)


async def _refusal(
    ctx: RepoScope, approval: Approval, head: str, paths: list[str]
) -> tuple[str, str] | None:
    """Why this approval does not land the PR (reason, next step), or None."""
    level = await permission_level(ctx.gh, ctx.repo, approval.login)
    if not has_write(level):
        if not ctx.landing.codeowners:
            return landing_text.WHY_PERMISSION, landing_text.NEXT_STEP_HUMAN
        rules = await _codeowners(ctx)
        not_owned = paths_not_owned_by(approval.login, paths, rules)
        if not paths or not_owned:
            reason = landing_text.WHY_PERMISSION_OR_OWNER.format(
                paths=landing_text.code(not_owned) or "its files"
            )
            return reason, landing_text.NEXT_STEP_HUMAN
    if not approved_at_head(approval.commit_id, head):
        reason = landing_text.WHY_STALE.format(
            approved7=str(approval.commit_id or "?")[:7], head7=head[:7]
        )
        return reason, landing_text.NEXT_STEP_REAPPROVE
    outside = paths_outside(paths, ctx.landing.paths)
    if outside:
        reason = landing_text.WHY_PATHS.format(
            paths=landing_text.code(outside), globs=landing_text.code(ctx.landing.paths)
        )
        return reason, landing_text.NEXT_STEP_HUMAN
    return None


async def _codeowners(ctx: RepoScope) -> list[OwnerRule]:
    """The default branch's CODEOWNERS rules (none when there is no such file)."""
    for path in CODEOWNERS_PATHS:
        raw = await changes.read_file(ctx.gh, ctx.repo, path, None)
        if raw is not None:
            return await ctx.blocking.run(parse_codeowners, raw.decode("utf-8", "replace"))
    return []


async def _refuse_once(ctx: RepoScope, approval: Approval, reason: str, next_step: str) -> None:
    body = landing_text.REFUSED.format(login=approval.login, reason=reason, next_step=next_step)
    marker = landing_text.MARKER_REFUSED.format(review=approval.review_id)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, approval.number, body, marker)


async def _add_missing_labels(
    ctx: RepoScope, pull: Mapping[str, Any], state: LandingState
) -> Mapping[str, Any]:
    """Put the labels on approval on the PR (the state saved first, with when); the PR with
    the labels it has now (GitHub answers with them), which landing checks next."""
    number = int(pull["number"])
    have = {str(label["name"]).casefold() for label in pull.get("labels") or []}
    missing = [name for name in ctx.landing.labels_on_approval if name.casefold() not in have]
    if missing:
        # Before the request: a lower bound of the label's time, finer than GitHub's.
        state.labels_added_at = ctx.clock()
    await save_state(ctx, number, state)
    if not missing:
        return pull
    labels = await ctx.gh.post(
        "/repos/{owner}/{repo}/issues/{number}/labels",
        url_vars=ctx.repo.vars(number=str(pull["number"])),
        data={"labels": missing},
    )
    return {**pull, "labels": labels}
