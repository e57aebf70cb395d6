"""Audit evidence on a bump PR → a prune commit on that PR (or, on a human's branch,
a suggestion), for the allowlist entries the pin owns.

Log evidence cannot tell a pattern that matched only stable libraries from
one that matched stable *and* unstable ones (both are reported stale), so the
bot deletes on log evidence and lets CI be the oracle: if the next audit finds
unstable libraries outside the allowlist that a removed pattern used to
cover, the removal becomes a narrowing to exactly those libraries.

The prune commit sits on top of the bump commit and is recorded in the pin's
bump state (its prunes survive a rebuild of the bump); like the bump, it is
recorded as an intent before the branch moves, so a rerun finishes it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import gidgethub

from bot.abi.judge import propose_pattern
from bot.allowlist import text as allowlist_text
from bot.allowlist.commit import Edit, plan_edit
from bot.allowlist.evidence import AuditRun
from bot.allowlist.follow_up import AllowlistOutcome, allowlist_file, comment_once, owned
from bot.config.models import PinConfig
from bot.context.scope import RepoScope
from bot.core.errors import TransientError
from bot.github import changes, neutralise
from bot.pins import text as bump_text
from bot.pins.state import PinState
from bot.store.kinds import Kind, pin_key

PRUNE_INTENT = "prune_intent"  # in the pin's bump state: a prune commit being pushed
ERROR_BUMP_UNFINISHED = "the bump of {pin} is unfinished; the allowlist follow-up waits for it"


def next_prunes(
    prunes: Mapping[str, Sequence[str]], stale: Sequence[str], outside: Sequence[str]
) -> dict[str, list[str]]:
    """Prunes after new evidence: stale → delete; outside libs a removed pattern covered →
    narrow to exactly those."""
    result = {p: list(n) for p, n in prunes.items()}
    for pattern in stale:
        result.setdefault(pattern, [])
    for pattern in list(result):
        uncovered = [lib for lib in outside if fnmatch.fnmatchcase(lib, pattern)]
        if uncovered:
            result[pattern] = sorted({*result[pattern], *propose_pattern(uncovered)})
    return result


async def _unexpected_comment(ctx: RepoScope, number: int, run: AuditRun, skip: set[str]) -> None:
    libraries = [lib for lib in run.evidence.outside if lib not in skip]
    if not libraries:
        return
    body = allowlist_text.COMMENT_UNEXPECTED.format(
        job_url=run.url,
        variable=ctx.allowlist.variable,
        libraries=allowlist_text.code_list(libraries),
        file=ctx.allowlist.file,
        lines=allowlist_text.allowlist_lines(propose_pattern(libraries)),
    )
    await comment_once(ctx, number, f"{run.key}:unexpected", body)


async def follow_up_bump(ctx: RepoScope, pin: PinConfig, run: AuditRun) -> AllowlistOutcome:
    """Apply a bump PR's own audit evidence to that PR; returns what happened."""
    key = pin_key(ctx.repo.full_name, pin.name)
    branch = bump_text.bump_branch(pin.name)
    async with ctx.locks.hold(key):
        state = PinState.load(await ctx.store.get_state(Kind.BUMP, key))
        head = await _branch_head(ctx, branch)
        intent = state.extra.get(PRUNE_INTENT)
        if _prune_pushed(intent, run, head):
            # Our prune commit for this very evidence reached the branch and the run
            # stopped there: finish it rather than read the branch as moved on.
            return await _finish_prune(ctx, key, state, intent)
        if head is None or head.sha != run.commit:
            return AllowlistOutcome.NOT_THE_HEAD
        if state.intent is not None:
            # The bump's own rerun finishes it (same lock, its delivery is retried);
            # a prune commit on top now would hide the head it is looking for.
            raise TransientError(ERROR_BUMP_UNFINISHED.format(pin=pin.name))
        if head.sha == state.pending:
            # Our prune commit reached the branch but the run stopped before
            # recording it: it is ours, not a human's.
            state.head, state.pending = head.sha, None
        number = state.pr or await _open_pull_number(ctx, branch)
        if number is None:
            return AllowlistOutcome.NO_BUMP_PR
        mine = [p for p in run.evidence.stale if owned(p, pin)]
        theirs = [p for p in run.evidence.stale if not owned(p, pin)]
        prunes = next_prunes(state.prunes, mine, run.evidence.outside)
        covered = {
            lib for lib in run.evidence.outside for p in prunes if fnmatch.fnmatchcase(lib, p)
        }
        await _unexpected_comment(ctx, number, run, covered)
        change = await _pruned_text(ctx, state, head, prunes)
        if change is None:
            state.prunes = prunes
            await ctx.store.put_state(Kind.BUMP, key, state.dump())
            return AllowlistOutcome.NOTHING_TO_PRUNE
        base, text, edit = change
        # Log lines sit in a fixed fence: defused so they cannot carry a marker.
        lines = "\n".join(neutralise.defuse(line) for line in run.evidence.lines)
        if state.head != head.sha:
            body = allowlist_text.COMMENT_HUMAN_OWNED.format(
                job_url=run.url, file=ctx.allowlist.file, changes=edit.describe(), lines=lines
            )
            await comment_once(ctx, number, run.key, body)
            return AllowlistOutcome.SUGGESTED_ONLY
        trailers = (
            bump_text.trailer_block(pin.name, state.source, state.target)
            if state.source and state.target
            else None
        )
        message = allowlist_text.prune_message(pin.name, edit.describe(), trailers)
        sha = (await allowlist_file(ctx).commit(base, text, message)).sha
        body = allowlist_text.COMMENT_PRUNED.format(
            job_url=run.url,
            upstream=pin.upstream,
            sha7=sha[:7],
            file=ctx.allowlist.file,
            changes=edit.describe(),
            lines=lines,
        )
        if theirs:
            body += allowlist_text.COMMENT_NOT_OWNED.format(patterns=allowlist_text.codes(theirs))
        # Recorded before the branch moves: the commit, and the comment that explains it.
        intent = {"run": run.key, "sha": sha, "base": base.sha, "prunes": prunes}
        intent.update(pr=number, body=body)
        state.pending, state.extra[PRUNE_INTENT] = sha, intent
        await ctx.store.put_state(Kind.BUMP, key, state.dump())
        if base.sha == head.sha:
            await changes.advance_branch(ctx.gh, ctx.repo, branch, sha)
        else:  # replacing the bot's own earlier prune commit
            await changes.force_branch(ctx.gh, ctx.repo, branch, sha, exists=True)
        return await _finish_prune(ctx, key, state, intent)


def _prune_pushed(
    intent: object, run: AuditRun, head: changes.BranchHead | None
) -> TypeGuard[dict[str, Any]]:
    """Whether ``intent`` is this run's prune commit and it is the branch's head."""
    if not isinstance(intent, dict) or head is None:
        return False
    return intent.get("run") == run.key and intent.get("sha") == head.sha


async def _finish_prune(
    ctx: RepoScope, key: str, state: PinState, intent: Mapping[str, Any]
) -> AllowlistOutcome:
    """The prune commit is on the branch: record it, then explain it on the PR."""
    state.head, state.pending = str(intent["sha"]), None
    state.prunes = {str(p): list(n) for p, n in dict(intent["prunes"]).items()}
    state.extra["prune_base"] = intent["base"]
    await ctx.store.put_state(Kind.BUMP, key, state.dump())
    await comment_once(ctx, int(intent["pr"]), str(intent["run"]), str(intent["body"]))
    state.extra.pop(PRUNE_INTENT, None)
    await ctx.store.put_state(Kind.BUMP, key, state.dump())
    return AllowlistOutcome.PRUNED


async def _branch_head(ctx: RepoScope, branch: str) -> changes.BranchHead | None:
    try:
        return await changes.branch_head(ctx.gh, ctx.repo, branch)
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return None
        raise


async def _pruned_text(
    ctx: RepoScope,
    state: PinState,
    head: changes.BranchHead,
    prunes: Mapping[str, Sequence[str]],
) -> tuple[changes.BranchHead, str, Edit] | None:
    """Where the prune commit goes, the file it writes and the edit; None if nothing changes.

    A bot prune commit already on the branch is rebuilt from its parent (the
    bump commit), since narrowing must start from the entry it deleted.
    """
    base = head
    prune_base = state.extra.get("prune_base")
    if state.prunes and state.head == head.sha and isinstance(prune_base, str):
        base = await changes.commit_head(ctx.gh, ctx.repo, prune_base, name=head.name)
    file = allowlist_file(ctx)
    text = await file.read(base.sha)
    if text is None:
        return None
    edit = plan_edit(prunes, await file.entries(text))
    new_text = await file.edited(text, edit) if edit else text
    current = text if base.sha == head.sha else await file.read(head.sha)
    if new_text == current:
        return None
    return base, new_text, edit


async def _open_pull_number(ctx: RepoScope, branch: str) -> int | None:
    pulls = await changes.pulls_for_branch(ctx.gh, ctx.repo, branch)
    return next((int(pr["number"]) for pr in pulls if pr["state"] == "open"), None)
