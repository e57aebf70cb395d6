"""A `retry-flaky` command's plan, recorded and carried out: the rows as decided
(`bot.retry.rows`) written down before the first retry
(`plan_and_carry_out`), and each row acted on (`carry_out`: the step's cap, the retry,
the retried job's record, then the sticky comment).

The plan is written before its first retry: a rerun after a crash carries out this
plan instead of deciding again on a build its own retries have changed (a retried job
no longer shows as failed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.context.scope import RepoScope
from bot.core import metrics
from bot.failures.builds import FoundBuild
from bot.failures.classify import FailureClass
from bot.failures.retries import retry_counted
from bot.retry import text as retry_text
from bot.retry.request import Retried, RetryFlakyOutcome, RetryRequest
from bot.retry.sticky import show_command
from bot.store.kinds import Kind

Item = tuple[FoundBuild, dict[str, Any], bool]  # the build, the row, whether to retry

METRICS_FLOW = "retry-flaky"  # its retries' label in followup_bot_job_retries_total


async def plan_and_carry_out(
    ctx: RepoScope,
    request: RetryRequest,
    builds: Sequence[FoundBuild],
    items: Sequence[Item],
    *,
    forced: str | None,
    note: str | None = None,
) -> Retried:
    """Record what the command is about to do, then do it."""
    index = {found.key: n for n, found in enumerate(builds)}
    plan = {
        "builds": [
            {
                "org": f.org,
                "pipeline": f.pipeline,
                "build": {"number": f.number, "web_url": f.build.get("web_url")},
            }
            for f in builds
        ],
        "items": [
            {"build": index[found.key], "row": row, "retry": retry} for found, row, retry in items
        ],
        "forced": forced,
        "note": note,  # shown under the table (the registry's, when an image was missing)
    }
    key = f"{ctx.repo.full_name}#{request.comment_id}"
    await ctx.store.put_state(Kind.RETRY_PLAN, key, plan)
    return await carry_out(ctx, request, plan)


async def carry_out(ctx: RepoScope, request: RetryRequest, plan: dict[str, Any]) -> Retried:
    """Act on each row of a recorded plan, then show them all on the sticky comment."""
    builds = [FoundBuild(b["org"], b["pipeline"], dict(b["build"])) for b in plan["builds"]]
    forced = plan.get("forced")
    rows = [
        await _act(ctx, request, builds[item["build"]], dict(item["row"]), forced=forced)
        if item["retry"]
        else dict(item["row"])
        for item in plan["items"]
    ]
    await show_command(
        ctx, request, builds, rows=rows, merge=forced is not None, note=plan.get("note")
    )
    if forced is not None:
        return Retried(RetryFlakyOutcome.FORCED, forced)
    retried = sum(1 for row in rows if row.get("new_job_id"))
    failures = [row for row in rows if row.get("class") != FailureClass.CANCELED.value]
    return Retried(RetryFlakyOutcome.RETRIED, f"{retried} of {len(failures)}")


async def _act(
    ctx: RepoScope,
    request: RetryRequest,
    found: FoundBuild,
    row: dict[str, Any],
    *,
    forced: str | None,
) -> dict[str, Any]:
    """Retry the row's job, unless its step reached the cap (a forced retry ignores it)."""
    job_id = row["job_id"]
    step_key = f"{found.key}/{row.get('step_key') or job_id}"
    step = await ctx.store.get_state(Kind.RETRY_STEP, step_key) or {}
    count = int(step.get("count", 0))
    counted = job_id in (step.get("jobs") or [])  # by an attempt that did not finish
    if forced is None and not counted and count >= ctx.config.retry.max_retries_per_step:
        row["action"] = retry_text.ACTION_CAP.format(count=count)
        return row
    return await _retry(ctx, request, found, row, step_key, forced=forced is not None)


async def _retry(
    ctx: RepoScope,
    request: RetryRequest,
    found: FoundBuild,
    row: dict[str, Any],
    step_key: str,
    *,
    forced: bool,
) -> dict[str, Any]:
    job_id = row["job_id"]
    new = await retry_counted(ctx.buildkite, ctx.store, found, job_id, step_key)
    if isinstance(new, str):
        row["action"] = retry_text.ACTION_NOT_RETRYABLE.format(message=new)
        return row
    metrics.job_retried(str(row.get("class")), METRICS_FLOW)
    new_url = str(new.get("web_url") or "")
    row["new_job_id"] = str(new["id"])
    if forced:
        row["action"] = retry_text.ACTION_FORCED.format(reason=request.reason, url=new_url)
    else:
        row["action"] = retry_text.ACTION_RETRIED.format(url=new_url)
    row["outcome"] = retry_text.OUTCOME_RUNNING
    await ctx.store.put_state(
        Kind.RETRY_JOB,
        str(new["id"]),
        {
            "repo": ctx.repo.full_name,
            "pr": request.pr,
            "original_job_id": job_id,
            "step_key": row.get("step_key"),
            "name": row["name"],
            "class": row["class"],
            "rule": row.get("rule"),
            "evidence": row["evidence"],
            "requested_by": request.login,
            "reason": request.reason,
            "forced": forced,
            "build": found.key,
            "outcome": None,
            "at": ctx.clock(),
        },
    )
    return row
