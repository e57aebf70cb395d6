"""Audit evidence from the default branch → the one stale-entries PR, opened,
updated or closed.

The PR's branch is the bot's while its head is the commit the bot remembers
(or, with nothing remembered, the bot's own commit by message and committer);
a human's push leaves the PR to them. Like a bump, the commit is recorded
before the branch moves, so a rerun finishes with that very commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.allowlist import text as allowlist_text
from bot.allowlist.commit import plan_edit
from bot.allowlist.evidence import AuditRun
from bot.allowlist.follow_up import AllowlistOutcome, allowlist_file, comment_once
from bot.context.scope import RepoScope
from bot.github import changes, effects
from bot.github.changes import is_bot_identity
from bot.store.kinds import Kind


async def follow_up_main(
    ctx: RepoScope, run: AuditRun, base: changes.BranchHead
) -> AllowlistOutcome:
    """Open, update or close the one stale-entries PR from an audit of ``base``."""
    async with ctx.locks.hold(f"{ctx.repo.full_name}#allowlist"):
        if run.commit != base.sha:
            return AllowlistOutcome.OLDER_COMMIT
        state = dict(await ctx.store.get_state(Kind.ALLOWLIST_STALE, ctx.repo.full_name) or {})
        pulls = await changes.pulls_for_branch(ctx.gh, ctx.repo, allowlist_text.STALE_BRANCH)
        open_pr = next((pr for pr in pulls if pr["state"] == "open"), None)
        file = allowlist_file(ctx)
        text = await file.read(base.sha)
        if text is None:
            return AllowlistOutcome.NO_ALLOWLIST_FILE
        prunes: dict[str, list[str]] = {p: [] for p in run.evidence.stale}
        prunes.update({p: list(n) for p, n in run.narrow.items()})
        edit = plan_edit(prunes, await file.entries(text))
        if not edit:
            return await _close_stale_pr(ctx, open_pr, base.name, state)
        pr_head = str(open_pr["head"]["sha"]) if open_pr is not None else None
        if pr_head is not None and not await _stale_head_is_ours(ctx, state, pr_head):
            return AllowlistOutcome.HUMAN_OWNED
        if (
            pr_head is not None
            and pr_head == state.get("head")
            and state.get("evidence") == run.key
            and state.get("base") == base.sha
        ):
            return AllowlistOutcome.UNCHANGED
        describe = edit.describe()
        sha = _resumable_stale(state, run, base)
        if sha is None:
            new_text = await file.edited(text, edit)
            message = f"{allowlist_text.COMMIT_STALE}\n\n{describe}\n"
            sha = (await file.commit(base, new_text, message)).sha
            # Recorded before the branch moves: a rerun finishes with this very commit.
            state.update(pending=sha, pending_for={"evidence": run.key, "base": base.sha})
            await ctx.store.put_state(Kind.ALLOWLIST_STALE, ctx.repo.full_name, state)
        elif pr_head is None:
            pr_head = await changes.ref_sha(ctx.gh, ctx.repo, allowlist_text.STALE_BRANCH)
        if pr_head != sha:
            await changes.force_branch(
                ctx.gh, ctx.repo, allowlist_text.STALE_BRANCH, sha, exists=pr_head is not None
            )
        body = allowlist_text.BODY_STALE.format(
            branch=base.name,
            variable=ctx.allowlist.variable,
            file=ctx.allowlist.file,
            changes=describe,
            evidence=allowlist_text.evidence_block(run.url, run.evidence.lines, run.table),
            marker=allowlist_text.MARKER_STALE_PR,
        )
        if open_pr is None:
            state["pr"] = await _open_stale_pull(ctx, body, base.name, sha)
            outcome = AllowlistOutcome.OPENED
        else:
            await changes.update_pull(ctx.gh, ctx.repo, int(open_pr["number"]), body=body)
            outcome = AllowlistOutcome.UPDATED
        state.update(head=sha, pending=None, pending_for=None, evidence=run.key, base=base.sha)
        await ctx.store.put_state(Kind.ALLOWLIST_STALE, ctx.repo.full_name, state)
        return outcome


async def _stale_head_is_ours(ctx: RepoScope, state: dict[str, Any], head: str) -> bool:
    """Whether the stale-entries PR's head is the bot's: remembered, or (with nothing
    remembered, e.g. a new store) the bot's own commit, by message and committer."""
    if head in (state.get("head"), state.get("pending")):
        return True
    if state.get("head") is not None:
        return False  # the bot remembers another head: somebody pushed since
    commit = await changes.git_commit(ctx.gh, ctx.repo, head)
    message = str(commit.get("message") or "")
    if not message.startswith(allowlist_text.COMMIT_STALE):
        return False
    if not is_bot_identity(commit.get("committer"), ctx.bot_login):
        return False
    state["head"] = head
    return True


def _resumable_stale(
    state: Mapping[str, Any], run: AuditRun, base: changes.BranchHead
) -> str | None:
    """The stale-entries commit an unfinished run built for this evidence and base."""
    pending, pending_for = state.get("pending"), state.get("pending_for")
    if not isinstance(pending, str) or not isinstance(pending_for, dict):
        return None
    if pending_for.get("evidence") != run.key or pending_for.get("base") != base.sha:
        return None
    return pending


async def _open_stale_pull(ctx: RepoScope, body: str, base: str, sha: str) -> int:
    """Open the stale-entries PR; a lost answer is looked for by its branch and head."""

    async def create() -> int:
        created = await changes.create_pull(
            ctx.gh,
            ctx.repo,
            title=allowlist_text.STALE_TITLE,
            body=body,
            head=allowlist_text.STALE_BRANCH,
            base=base,
        )
        return int(created["number"])

    async def find() -> int | None:
        pulls = await changes.pulls_for_branch(ctx.gh, ctx.repo, allowlist_text.STALE_BRANCH)
        mine = (p for p in pulls if p["state"] == "open" and p["head"]["sha"] == sha)
        return next((int(p["number"]) for p in mine), None)

    return await effects.look_after_failure(create, find)


async def _close_stale_pr(
    ctx: RepoScope, open_pr: Mapping[str, Any] | None, branch: str, state: dict[str, Any]
) -> AllowlistOutcome:
    if open_pr is None:
        return AllowlistOutcome.NOTHING_STALE
    number = int(open_pr["number"])
    body = allowlist_text.COMMENT_STALE_GONE.format(file=ctx.allowlist.file, branch=branch)
    await comment_once(ctx, number, f"closed:{number}", body)
    await changes.update_pull(ctx.gh, ctx.repo, number, state="closed")
    state.update(head=None)
    await ctx.store.put_state(Kind.ALLOWLIST_STALE, ctx.repo.full_name, state)
    return AllowlistOutcome.CLOSED
