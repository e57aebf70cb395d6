"""Landing an approved bump: label it for full CI, then merge it once it is green.

Everything is level-triggered from what GitHub and Buildkite say now, with the
little the bot must remember in one store document per PR (kind ``landing``,
key ``<repo>#<number>``): which head was approved, whether auto-merge was
enabled for it, how many CI runs of it failed, and which comments were posted.
So an approval, a ``status`` webhook, a finished Buildkite build or a
redelivery of any of them each just call in, and only missing writes happen.

The approval is bound to the head it was given on: the merge names that sha
(GitHub answers 409 if the head moved), auto-merge is enabled with it as the
expected head, and a newer head voids the approval with one comment. It is judged
on the full CI only (``bot.landing.full_ci``). A merge refused at an unchanged head
because the base moved is tried again through the inbox (its delivery fails
transiently and runs again with backoff), a few times, then left to humans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gidgethub

from bot.buildkite import job_states
from bot.context.scope import RepoScope
from bot.core import metrics
from bot.core.errors import TransientError
from bot.failures.builds import FoundBuild, canceled_jobs, hard_failures
from bot.failures.verdicts import classify_failures, images_note
from bot.github import effects
from bot.github.default_branch import forget_head
from bot.landing import full_ci
from bot.landing import text as landing_text
from bot.landing.auto_merge import allows_auto_merge, enable_auto_merge
from bot.landing.checks import is_blocked, not_green, note_blocked_steps
from bot.landing.retries import job_row, judged_row, retry_job
from bot.landing.rules import (
    MERGE_CONFLICT,
    MERGE_NOT_ALLOWED,
    MERGE_RACE_RETRIES,
    lost_a_race,
    may_merge_again,
    may_retry,
)
from bot.landing.state import (
    FAILED,
    PASSED,
    Landing,
    LandingOutcome,
    LandingState,
    load_state,
    pr_lock,
    read_pull,
    record_landed,
    save_state,
)
from bot.landing.withdraw import disable_auto_merge, void_approval
from bot.retry.rows import canceled_row

WAITING_NEVER_RAN = (
    "build #{number} failed only by jobs that never ran or were canceled ({names}); "
    "nothing to retry"
)


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
    if pull.get("merged") or pull["state"] != "open":
        return await _not_open(ctx, number, state, pull)
    head = str(pull["head"]["sha"])
    if head != state.approved_head:
        return await void_approval(ctx, number, state, head, pull)
    if state.stopped_for == head:
        return Landing(LandingOutcome.LEFT_TO_HUMANS)
    builds = await _judged_builds(ctx, number, state, pull)
    if not isinstance(builds, list):
        # Not even auto-merge yet: GitHub would merge on the reduced build's statuses.
        return builds
    if state.auto_merge_for != head and await allows_auto_merge(ctx):
        await enable_auto_merge(ctx, number, state, pull)
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


async def _not_open(
    ctx: RepoScope, number: int, state: LandingState, pull: Mapping[str, Any]
) -> Landing:
    """Merged (by anyone: the pin cools down) or closed: nothing left to land."""
    if state.awaiting_full_build is not None:
        state.awaiting_full_build = None  # nothing left for a reconcile tick to look at
        await save_state(ctx, number, state)
    if not pull.get("merged"):
        return Landing(LandingOutcome.CLOSED)
    await record_landed(ctx.store, ctx.repo, state.pin, number, ctx.clock())
    return Landing(LandingOutcome.ALREADY_MERGED)


async def _judged_builds(
    ctx: RepoScope, number: int, state: LandingState, pull: Mapping[str, Any]
) -> list[FoundBuild] | Landing:
    """The Buildkite builds the head is judged on (none without Buildkite), or why it waits."""
    if ctx.config.buildkite is None or ctx.bk is None:
        return []
    return await full_ci.judged_builds(ctx, number, pull, state)


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
        if status not in (MERGE_NOT_ALLOWED, MERGE_CONFLICT):
            raise
        pull = await read_pull(ctx, number)
        now = str(pull["head"]["sha"])
        if now != head:
            return await void_approval(ctx, number, state, now, pull)
        if not lost_a_race(status, pull.get("mergeable_state")):
            return Landing(LandingOutcome.NOT_MERGEABLE_YET)
        return await _lost_a_race(ctx, number, state, pull, status)
    metrics.landed(ctx.landing.merge_method)
    state.merged_sha = head
    await save_state(ctx, number, state)
    await record_landed(ctx.store, ctx.repo, state.pin, number, ctx.clock())
    return Landing(LandingOutcome.MERGED, head[:7])


async def _lost_a_race(
    ctx: RepoScope, number: int, state: LandingState, pull: Mapping[str, Any], status: int
) -> Landing:
    """The merge lost a race with the base branch: no further event may come (CI is done),
    so the delivery fails transiently and the inbox runs it again with its backoff; after
    ``MERGE_RACE_RETRIES`` tries, one comment and the head is left to humans."""
    head = str(pull["head"]["sha"])
    count = state.merge_races.get(head, 0) + 1
    state.merge_races[head] = count
    await save_state(ctx, number, state)
    if may_merge_again(count):
        raise TransientError(
            landing_text.MERGE_RACE_AGAIN.format(
                head7=head[:7],
                status=status,
                state=pull.get("mergeable_state"),
                count=count,
                limit=MERGE_RACE_RETRIES,
            )
        )
    state.stopped_for = head
    body = landing_text.MERGE_RACES_LOST.format(head7=head[:7], count=count, status=status)
    marker = landing_text.MARKER_MERGE_RACES.format(head=head)
    # Posted before the state says so: a failed post is retried, not forgotten.
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    await save_state(ctx, number, state)
    return Landing(LandingOutcome.MERGE_RACES_LOST, head[:7])


async def on_bump_build(ctx: RepoScope, number: int, pipeline: str, build_number: int) -> Landing:
    """Build ``build_number`` of the bump PR ``number`` finished in ``pipeline``: act on it.
    Run under the PR's subject (``handlers.landing`` hands it over)."""
    where = ctx.config.buildkite
    if where is None or pipeline not in where.pipelines:
        return Landing(LandingOutcome.NOTHING_TO_DO, f"pipeline {pipeline} not configured")
    # The webhook's build has no jobs; the flow needs them, so read the build itself.
    build = await ctx.buildkite.build(where.organization, pipeline, build_number)
    return await on_build_finished(ctx, number, FoundBuild(where.organization, pipeline, build))


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
        built = found.build.get("state")
        if built == FAILED and await full_ci.counts(ctx, number, pull, state, found):
            return await _failed_build(ctx, number, state, pull, found)
        # A failed build from before the labels (the reduced pipeline) is no verdict:
        # landing goes on waiting for (or starting) the full CI.
        if built in (PASSED, FAILED) or is_blocked(found.build):
            return await advance_locked(ctx, number, state, pull)
        return Landing(LandingOutcome.NOTHING_TO_DO, f"build #{found.number} {built}")


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
        # step out; skipped; canceled, before they started or while they ran: a person
        # stopped them, which is no failure of the head). A retry would not run them, so
        # this is no flaky failure to retry; nothing failed, so nothing to leave the head
        # to humans for; but a required step that did not run is not green either. So
        # landing neither retries, nor stops, nor merges: it waits with the approval
        # standing, and a newer build of the head that passes (a rebuild) lands it.
        names = ", ".join(
            str(job.get("name") or job.get("step_key") or job.get("id"))
            for job in found.build.get("jobs") or []
            if not job.get("retried")
            and (job_states.never_ran(job) or job_states.is_canceled_job(job))
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
    return job_states.failed_without_a_failure_of_its_own(found.build.get("jobs") or [])


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
        rows = [job_row(job) for job in failed]
        return await _stop(ctx, number, state, pull, landing_text.TOO_MANY_FAILED, found, rows)
    retry_ctx = ctx
    # The retry-flaky classifier, as is: landing must call a failure flaky exactly
    # when `@bot retry-flaky` would.
    decided = await classify_failures(retry_ctx, found, failed, head)
    rows = [judged_row(job, verdict) for job, verdict in decided]
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
        retried += await retry_job(ctx, number, found, row, attempt=runs + 1, head=head)
    if retried == 0:
        return await _stop(ctx, number, state, pull, landing_text.NOT_RETRYABLE, found, rows)
    return Landing(
        LandingOutcome.RETRIED, f"{retried} job(s) of build #{found.number}, attempt {runs + 1}"
    )


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
    canceled = [canceled_row(job)[0] for job in canceled_jobs(found.build)]
    if canceled:
        rows_text = landing_text.failing_rows(canceled)
        body = f"{body}\n\n{landing_text.CANCELED_JOBS.format(rows=rows_text)}"
    if extra:
        body = f"{body}\n\n{extra}"
    marker = landing_text.MARKER_STOPPED.format(head=head)
    # Posted before the state says so: a failed post is retried, not forgotten.
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    await save_state(ctx, number, state)
    return Landing(LandingOutcome.STOPPED, head[:7])
