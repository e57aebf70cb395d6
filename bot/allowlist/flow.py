"""Audit evidence → allowlist follow-ups, on a bump PR or as the stale-entries PR.

Two rules keep this safe. The bot only ever *removes* or *narrows* entries
(it never adds one: unexpected unstable libraries get a comment a human can
act on). And evidence from one platform never deletes an entry that matched
nothing there: such entries are not reported stale, so they are never touched.

Log evidence cannot tell a pattern that matched only stable libraries from
one that matched stable *and* unstable ones (both are reported stale), so the
bot deletes on log evidence and lets CI be the oracle: if the next audit finds
unstable libraries outside the allowlist that a removed pattern used to
cover, the removal becomes a narrowing to exactly those libraries. An audit
of the wheel itself (``bot.abi.judge``) knows the difference up front.
"""

from __future__ import annotations

import enum
import fnmatch
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import gidgethub

from bot.abi.judge import AuditResult, propose_pattern, render_table
from bot.abi.log import PASSED, AuditEvidence, parse_audit_log
from bot.allowlist import text as allowlist_text
from bot.allowlist.commit import AllowlistFile, Edit, plan_edit
from bot.buildkite.client import BuildkiteClient
from bot.config.models import PinConfig
from bot.github import changes, effects, neutralise
from bot.github.changes import is_bot_identity
from bot.pins import bump
from bot.pins import text as bump_text
from bot.service.errors import TransientError
from bot.service.scope import RepoScope
from bot.store.kinds import Kind, pin_key

log = logging.getLogger(__name__)

PRUNE_INTENT = "prune_intent"  # in the pin's bump state: a prune commit being pushed
ERROR_BUMP_UNFINISHED = "the bump of {pin} is unfinished; the allowlist follow-up waits for it"


@dataclass(frozen=True)
class AuditRun:
    """One audit: what it said and where (a Buildkite job, or the bot's own wheel audit)."""

    commit: str
    branch: str
    key: str  # idempotency key of this evidence (the job id, or "wheel:<commit>")
    url: str | None  # link to the job, when there is one
    evidence: AuditEvidence
    # From a wheel audit only: pattern → narrower patterns (the audit knew the libraries),
    # and the per-pattern table as evidence.
    narrow: Mapping[str, Sequence[str]] = field(default_factory=dict)
    table: str | None = None


class AllowlistOutcome(enum.StrEnum):
    """What one piece of audit evidence led to (the log line)."""

    NOT_THE_HEAD = "evidence is not for the bump branch's head"
    NO_BUMP_PR = "no open bump PR"
    NOTHING_TO_PRUNE = "nothing to prune"
    SUGGESTED_ONLY = "human-owned branch: suggested only"
    PRUNED = "pruned"
    OLDER_COMMIT = "evidence is for an older main commit"
    NO_ALLOWLIST_FILE = "no allowlist file"
    HUMAN_OWNED = "human-owned stale-entries PR left alone"
    UNCHANGED = "unchanged"
    NOTHING_STALE = "nothing stale"
    CLOSED = "closed"
    OPENED = "opened"
    UPDATED = "updated"


def run_from_wheel(result: AuditResult, commit: str, branch: str) -> AuditRun:
    """The bot's own audit of a wheel, as evidence: stale = delete or narrow decisions."""
    stale = tuple(p.pattern for p in result.patterns if p.decision in ("delete", "narrow"))
    evidence = AuditEvidence(
        passed=result.exit_code == 0,
        outside=tuple(lib.path for lib in result.unexpected),
        stale=stale,
        inspection_error=None,
        lines=result.check_lines or (PASSED,),
    )
    narrow = {p.pattern: list(p.replacement) for p in result.patterns if p.decision == "narrow"}
    return AuditRun(commit, branch, f"wheel:{commit}", None, evidence, narrow, render_table(result))


def allowlist_file(ctx: RepoScope) -> AllowlistFile:
    """The repository's allowlist file, read and edited through the scope's client."""
    return AllowlistFile(ctx.gh, ctx.blocking, ctx.repo, ctx.allowlist)


def owned(pattern: str, pin: PinConfig) -> bool:
    return any(fnmatch.fnmatchcase(pattern, own) for own in pin.owns)


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


async def _comment_once(ctx: RepoScope, number: int, key: str, body: str) -> None:
    """Comment unless this evidence was already commented on this PR."""
    marker = allowlist_text.MARKER_EVIDENCE.format(job=key)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)


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
    await _comment_once(ctx, number, f"{run.key}:unexpected", body)


# --- on a bump PR ---------------------------------------------------------------


async def follow_up_bump(ctx: RepoScope, pin: PinConfig, run: AuditRun) -> AllowlistOutcome:
    """Apply a bump PR's own audit evidence to that PR; returns what happened."""
    key = pin_key(ctx.repo.full_name, pin.name)
    branch = bump_text.bump_branch(pin.name)
    async with ctx.locks.hold(key):
        state = bump.PinState.load(await ctx.store.get_state(Kind.BUMP, key))
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
            await _comment_once(ctx, number, run.key, body)
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
    ctx: RepoScope, key: str, state: bump.PinState, intent: Mapping[str, Any]
) -> AllowlistOutcome:
    """The prune commit is on the branch: record it, then explain it on the PR."""
    state.head, state.pending = str(intent["sha"]), None
    state.prunes = {str(p): list(n) for p, n in dict(intent["prunes"]).items()}
    state.extra["prune_base"] = intent["base"]
    await ctx.store.put_state(Kind.BUMP, key, state.dump())
    await _comment_once(ctx, int(intent["pr"]), str(intent["run"]), str(intent["body"]))
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
    state: bump.PinState,
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


# --- the stale-entries PR from main-branch evidence -------------------------------


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
    await _comment_once(ctx, number, f"closed:{number}", body)
    await changes.update_pull(ctx.gh, ctx.repo, number, state="closed")
    state.update(head=None)
    await ctx.store.put_state(Kind.ALLOWLIST_STALE, ctx.repo.full_name, state)
    return AllowlistOutcome.CLOSED


# --- evidence from Buildkite --------------------------------------------------------

FINISHED_JOB_STATES = frozenset({"passed", "failed", "timed_out", "canceled", "broken"})


async def audit_run_from_build(
    bk: BuildkiteClient,
    org: str,
    pipeline: str,
    number: int,
    *,
    step_key: str,
    variable: str,
) -> AuditRun | None:
    """The audit job of a finished build and what its log says; None without a verdict."""
    build = await bk.build(org, pipeline, number)
    jobs = [
        job
        for job in build.get("jobs") or []
        if job.get("step_key") == step_key and job.get("state") in FINISHED_JOB_STATES
    ]
    if not jobs:
        return None
    job = jobs[-1]  # the build lists the latest attempt of each step
    raw = await bk.job_log_tail(org, pipeline, number, str(job["id"]))
    evidence = parse_audit_log(raw, variable=variable)
    if not evidence.found:
        log.info("audit job %s has no verdict in its log tail", job.get("web_url"))
        return None
    return AuditRun(
        commit=str(build["commit"]),
        branch=str(build["branch"]),
        key=str(job["id"]),
        url=job.get("web_url"),
        evidence=evidence,
    )
