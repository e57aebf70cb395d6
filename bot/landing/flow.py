"""Landing an approved bump: label it for full CI, then merge it once it is green.

Everything is level-triggered from what GitHub and Buildkite say now, with the
little the bot must remember in one store document per PR (kind ``landing``,
key ``<repo>#<number>``): which head was approved, whether auto-merge was
enabled for it, how many CI runs of it failed, and which comments were posted.
So an approval, a ``status`` webhook, a finished Buildkite build or a
redelivery of any of them each just call in, and only missing writes happen.

The approval is bound to the head it was given on: the merge names that sha
(GitHub answers 409 if the head moved), auto-merge is enabled with it as the
expected head, and a newer head voids the approval with one comment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gidgethub

from bot.buildkite import job_states
from bot.buildkite.client import BuildkiteClient
from bot.github import effects
from bot.github.default_branch import forget_head
from bot.landing import text as landing_text
from bot.landing.checks import head_builds, is_blocked, not_green, note_blocked_steps
from bot.landing.rules import (
    may_retry,
)
from bot.landing.state import (
    FAILED,
    PASSED,
    Landing,
    LandingOutcome,
    LandingState,
    load_state,
    log,
    open_bump_pull,
    pr_lock,
    read_pull,
    record_landed,
    save_state,
)
from bot.landing.withdraw import disable_auto_merge, void_approval
from bot.retry.builds import FoundBuild, hard_failures
from bot.retry.classify import Verdict
from bot.retry.retries import retry_counted
from bot.retry.verdicts import classify_failures, images_note
from bot.service import metrics
from bot.service.scope import RepoScope
from bot.store.kinds import Kind

MERGE_NOT_ALLOWED = 405  # required checks or reviews not satisfied (yet)


MERGE_HEAD_MOVED = 409  # the sha we named is no longer the head


GRAPHQL_METHODS = {"merge": "MERGE", "squash": "SQUASH", "rebase": "REBASE"}


WAITING_NEVER_RAN = "build #{number} failed only by jobs that never ran ({names}); nothing to retry"


ENABLE_AUTO_MERGE = """
mutation($pr: ID!, $method: PullRequestMergeMethod!, $head: GitObjectID!) {
  enablePullRequestAutoMerge(
    input: {pullRequestId: $pr, mergeMethod: $method, expectedHeadOid: $head}
  ) {
    pullRequest { number }
  }
}
"""


async def advance(ctx: RepoScope, number: int) -> Landing:
    """Something about the PR's checks changed: land it if it is approved and green."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await load_state(ctx, number)
        if state.approved_head is None:
            return Landing(LandingOutcome.NOT_APPROVED)
        return await advance_locked(ctx, number, state, await read_pull(ctx, number))


async def advance_locked(
    ctx: RepoScope, number: int, state: LandingState, pull: Mapping[str, Any]
) -> Landing:
    if pull.get("merged"):
        await record_landed(ctx.store, ctx.repo, state.pin, number, ctx.clock())
        return Landing(LandingOutcome.ALREADY_MERGED)
    if pull["state"] != "open":
        return Landing(LandingOutcome.CLOSED)
    head = str(pull["head"]["sha"])
    if head != state.approved_head:
        return await void_approval(ctx, number, state, head, pull)
    if state.stopped_for == head:
        return Landing(LandingOutcome.LEFT_TO_HUMANS)
    if state.auto_merge_for != head and await _allows_auto_merge(ctx):
        await _enable_auto_merge(ctx, number, state, pull)
    builds: list[FoundBuild] = []
    if ctx.config.buildkite is not None and ctx.bk is not None:
        builds = await head_builds(ctx.bk, ctx.config.buildkite, number, head)
    failed = [found for found in builds if found.build.get("state") == FAILED]
    # A build with a failure of its own first: one failed only by jobs that never ran
    # just waits (see _failed_build), which must not hide another pipeline's failure.
    failed.sort(key=_failed_only_by_jobs_that_never_ran)
    if failed:
        # Failed before this call (e.g. before the approval): act on it now, not never.
        return await _failed_build(ctx, number, state, pull, failed[0])
    if state.auto_merge_for == head:
        return Landing(LandingOutcome.AUTO_MERGE, head[:7])
    waiting = await not_green(ctx, head, builds)
    if waiting is not None:
        return Landing(LandingOutcome.WAITING, waiting)
    await note_blocked_steps(ctx, number, head, builds)
    return await _merge(ctx, number, state, head)


async def _allows_auto_merge(ctx: RepoScope) -> bool:
    data = await ctx.gh.getitem("/repos/{owner}/{repo}", url_vars=ctx.repo.vars())
    return data.get("allow_auto_merge") is True


async def _enable_auto_merge(
    ctx: RepoScope, number: int, state: LandingState, pull: Mapping[str, Any]
) -> None:
    head = str(pull["head"]["sha"])
    try:
        await ctx.gh.graphql(
            ENABLE_AUTO_MERGE,
            pr=str(pull["node_id"]),
            method=GRAPHQL_METHODS[ctx.landing.merge_method],
            head=head,
        )
    except gidgethub.GraphQLException as exc:
        # E.g. the PR can merge right now ("clean status") or the branch has no
        # required checks: then the bot merges it itself once it is green.
        log.info("%s#%d: auto-merge not enabled: %s", ctx.repo.full_name, number, exc)
        return
    state.auto_merge_for = head
    await save_state(ctx, number, state)


async def _merge(ctx: RepoScope, number: int, state: LandingState, head: str) -> Landing:
    async def merge() -> bool:
        await ctx.gh.put(
            "/repos/{owner}/{repo}/pulls/{number}/merge",
            url_vars=ctx.repo.vars(number=str(number)),
            data={"sha": head, "merge_method": ctx.landing.merge_method},
        )
        return True

    async def merged() -> bool | None:
        # A lost answer may hide a merge GitHub did make: the PR says.
        pull = await read_pull(ctx, number)
        return True if pull.get("merged") and pull["head"]["sha"] == head else None

    try:
        await effects.look_after_failure(merge, merged)
        forget_head(ctx.repo)  # main moved: later reads of this delivery see the merge
    except gidgethub.BadRequest as exc:
        status = int(exc.status_code)
        if status == MERGE_NOT_ALLOWED:
            return Landing(LandingOutcome.NOT_MERGEABLE_YET)
        if status != MERGE_HEAD_MOVED:
            raise
        pull = await read_pull(ctx, number)
        now = str(pull["head"]["sha"])
        if now == head:
            return Landing(LandingOutcome.CONFLICT)
        return await void_approval(ctx, number, state, now, pull)
    metrics.landed(ctx.landing.merge_method)
    state.merged_sha = head
    await save_state(ctx, number, state)
    await record_landed(ctx.store, ctx.repo, state.pin, number, ctx.clock())
    return Landing(LandingOutcome.MERGED, head[:7])


async def on_bump_build(
    ctx: RepoScope, branch: str, pipeline: str, number: int
) -> tuple[int, Landing] | None:
    """A build of a bump branch finished in a configured pipeline: act on it for that
    branch's open bump PR; (the PR's number, what was done), or None without one."""
    where = ctx.config.buildkite
    pull = await open_bump_pull(ctx.gh, ctx.repo, branch, ctx.bot_login)
    if where is None or pull is None:
        return None
    # The webhook's build has no jobs; the flow needs them, so read the build itself.
    build = await ctx.buildkite.build(where.organization, pipeline, number)
    found = FoundBuild(where.organization, pipeline, build)
    return int(pull["number"]), await on_build_finished(ctx, int(pull["number"]), found)


async def on_build_finished(ctx: RepoScope, number: int, found: FoundBuild) -> Landing:
    """A Buildkite build of the PR finished: land on green, retry what is flaky, else stop."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await load_state(ctx, number)
        if state.approved_head is None:
            return Landing(LandingOutcome.NOT_APPROVED)
        pull = await read_pull(ctx, number)
        head = str(pull["head"]["sha"])
        if str(found.build.get("commit")) != head or head != state.approved_head:
            return await advance_locked(ctx, number, state, pull)
        if state.stopped_for == head:
            return Landing(LandingOutcome.LEFT_TO_HUMANS)
        if found.build.get("state") == PASSED or is_blocked(found.build):
            return await advance_locked(ctx, number, state, pull)
        if found.build.get("state") != FAILED:
            return Landing(
                LandingOutcome.NOTHING_TO_DO, f"build #{found.number} {found.build.get('state')}"
            )
        return await _failed_build(ctx, number, state, pull, found)


async def _failed_build(
    ctx: RepoScope,
    number: int,
    state: LandingState,
    pull: Mapping[str, Any],
    found: FoundBuild,
) -> Landing:
    head = str(pull["head"]["sha"])
    failed = hard_failures(found.build)
    if _failed_only_by_jobs_that_never_ran(found):
        # The build failed, yet none of its jobs failed by itself: all that stands in the
        # way is jobs that never ran (broken: a failed dependency or a condition kept the
        # step out; skipped; canceled before they started). A retry would not run them, so
        # this is no flaky failure to retry; nothing failed, so nothing to leave the head
        # to humans for; but a required step that did not run is not green either. So
        # landing neither retries, nor stops, nor merges: it waits with the approval
        # standing, and a newer build of the head that passes (a rebuild) lands it.
        names = ", ".join(
            str(job.get("name") or job.get("step_key") or job.get("id"))
            for job in found.build.get("jobs") or []
            if not job.get("retried") and job_states.never_ran(job)
        )
        return Landing(
            LandingOutcome.WAITING, WAITING_NEVER_RAN.format(number=found.number, names=names)
        )
    seen = f"{found.key}:" + ",".join(sorted(str(job["id"]) for job in failed))
    if seen in state.seen_failures:
        return Landing(LandingOutcome.HANDLED_ALREADY)
    runs = state.handling.get(seen)
    if runs is None:
        # Counted before acting: a redelivery or a crash never buys the head an extra
        # attempt. It is marked handled only once acted on, so a crash in between
        # finishes the job on the rerun (with this same count) instead of losing it.
        runs = state.failed_runs.get(head, 0) + 1
        state.failed_runs[head] = runs
        state.handling = {seen: runs}
        await save_state(ctx, number, state)
    outcome = await _act_on_failure(ctx, number, state, pull, found, failed, runs)
    state.seen_failures.append(seen)
    state.handling = {}
    await save_state(ctx, number, state)
    return outcome


def _failed_only_by_jobs_that_never_ran(found: FoundBuild) -> bool:
    return job_states.failed_only_by_jobs_that_never_ran(found.build.get("jobs") or [])


async def _act_on_failure(
    ctx: RepoScope,
    number: int,
    state: LandingState,
    pull: Mapping[str, Any],
    found: FoundBuild,
    failed: list[dict[str, Any]],
    runs: int,
) -> Landing:
    head = str(pull["head"]["sha"])
    limit = ctx.config.retry.max_failed_jobs
    if len(failed) > limit:
        rows = [_plain_row(job) for job in failed]
        return await _stop(ctx, number, state, pull, landing_text.TOO_MANY_FAILED, found, rows)
    retry_ctx = ctx
    # The retry-flaky classifier, as is: landing must call a failure flaky exactly
    # when `@bot retry-flaky` would.
    decided = await classify_failures(retry_ctx, found, failed, head)
    rows = [_row(job, verdict) for job, verdict in decided]
    real = [row for row, (_job, verdict) in zip(rows, decided, strict=True) if not verdict.retry]
    if real or not failed:
        images = await images_note(ctx, found, [verdict for _job, verdict in decided])
        return await _stop(
            ctx, number, state, pull, landing_text.REAL_FAILURE, found, real, extra=images
        )
    if not may_retry(runs):
        return await _stop(ctx, number, state, pull, landing_text.ATTEMPTS_EXHAUSTED, found, rows)
    retried = 0
    for row in rows:
        retried += await _retry(ctx, number, found, row, attempt=runs + 1, head=head)
    if retried == 0:
        return await _stop(ctx, number, state, pull, landing_text.NOT_RETRYABLE, found, rows)
    return Landing(
        LandingOutcome.RETRIED, f"{retried} job(s) of build #{found.number}, attempt {runs + 1}"
    )


def _bk(ctx: RepoScope) -> BuildkiteClient:
    assert ctx.bk is not None, "a finished build arrives only when Buildkite is configured"
    return ctx.bk


def _plain_row(job: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "job_id": str(job["id"]),
        "name": str(job.get("name") or job.get("step_key") or job["id"]),
        "url": str(job.get("web_url") or ""),
        "step_key": job.get("step_key"),
        "class": str(job.get("state")),
        "evidence": f"exit status {job.get('exit_status')}",
        "rule": None,
    }


def _row(job: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    row = _plain_row(job)
    row.update(
        {"class": verdict.failure_class.value, "evidence": verdict.evidence, "rule": verdict.rule}
    )
    return row


async def _retry(
    ctx: RepoScope,
    number: int,
    found: FoundBuild,
    row: dict[str, Any],
    *,
    attempt: int,
    head: str,
) -> int:
    """Retry one job (1) or learn it cannot be (0); recorded like retry-flaky's retries."""
    step_key = f"{found.key}/{row.get('step_key') or row['job_id']}"
    # Counted like retry-flaky's retries, so its per-step cap sees them.
    new = await retry_counted(_bk(ctx), ctx.store, found, row["job_id"], step_key)
    if isinstance(new, str):
        log.info("%s#%d: %s not retried: %s", ctx.repo.full_name, number, row["name"], new)
        return 0
    metrics.job_retried(str(row["class"]), "landing")
    await ctx.store.put_state(
        Kind.RETRY_JOB,
        str(new["id"]),
        {
            "repo": ctx.repo.full_name,
            "pr": number,
            "original_job_id": row["job_id"],
            "step_key": row.get("step_key"),
            "name": row["name"],
            "class": row["class"],
            "rule": row.get("rule"),
            "evidence": row["evidence"],
            "requested_by": ctx.bot_login,
            "reason": landing_text.RETRY_REASON.format(head7=head[:7], attempt=attempt),
            "forced": False,
            "build": found.key,
            "outcome": None,
            "at": ctx.clock(),
            "source": "landing",
        },
    )
    return 1


async def _stop(
    ctx: RepoScope,
    number: int,
    state: LandingState,
    pull: Mapping[str, Any],
    template: str,
    found: FoundBuild,
    rows: list[dict[str, Any]],
    *,
    extra: str | None = None,
) -> Landing:
    """Leave the head to humans, with one comment that lists the failing jobs (and, when
    an image was missing, the registry's table)."""
    head = str(pull["head"]["sha"])
    state.stopped_for = head
    if state.auto_merge_for == head:
        state.auto_merge_for = None
        await disable_auto_merge(ctx, number, pull)
    body = template.format(
        build=found.number,
        build_url=str(found.build.get("web_url") or ""),
        head7=head[:7],
        count=len(hard_failures(found.build)),
        limit=ctx.config.retry.max_failed_jobs,
        attempts=state.failed_runs.get(head, 0),
        rows=landing_text.failing_rows(rows),
    )
    if extra:
        body = f"{body}\n\n{extra}"
    marker = landing_text.MARKER_STOPPED.format(head=head)
    # Posted before the state says so: a failed post is retried, not forgotten.
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    await save_state(ctx, number, state)
    return Landing(LandingOutcome.STOPPED, head[:7])
