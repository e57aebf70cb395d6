"""Each failed job of a build with its verdict (`classify_failures`): the job's log
tail and its step's main-branch history, put to the classifier with the repository's
flaky rules and infra patterns. Shared by retry-flaky and landing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.context.scope import RepoScope
from bot.failures.builds import FoundBuild
from bot.failures.classify import (
    DEFAULT_INFRA_PATTERNS,
    Failure,
    FailureClass,
    FlakyRule,
    LogPattern,
    Verdict,
    classify,
)
from bot.failures.history import History, main_history
from bot.github import changes
from bot.images.check import check_build
from bot.images.text import image_table

LOG_TAIL_BYTES = 65536
DAY = 86400.0


async def classify_failures(
    ctx: RepoScope, found: FoundBuild, failed: Sequence[dict[str, Any]], head: str
) -> list[tuple[dict[str, Any], Verdict]]:
    """Each failed job with its verdict (retry-flaky and landing share this)."""
    rules = [FlakyRule(r.name, r.log, r.step, r.label) for r in ctx.config.retry.flaky_rules]
    infra = [
        *DEFAULT_INFRA_PATTERNS,
        *(LogPattern(r.name, r.log) for r in ctx.config.retry.infra_patterns),
    ]
    history = await _history(ctx, found)
    since = ctx.clock() - ctx.config.retry.history_days * DAY
    decided = []
    for job in failed:
        tail = await _tail(ctx, found, job)
        step = job.get("step_key")
        shard = job.get("parallel_group_index")
        shard = shard if isinstance(shard, int) else None
        runs = history.runs(str(step), since=since, shard=shard) if step else []
        runs = await history.with_signatures(str(step), runs, shard=shard) if step else []
        failure = Failure(
            job_id=str(job["id"]),
            step_key=str(step) if step else None,
            name=str(job.get("name") or step or job["id"]),
            state=str(job.get("state")),
            exit_status=job.get("exit_status"),
            signal_reason=job.get("signal_reason"),
            web_url=str(job.get("web_url") or ""),
            log_tail=tail,
            finished_at=job.get("finished_at"),
        )
        decided.append(
            (job, classify(failure, history=runs, rules=rules, infra=infra, pr_commit=head))
        )
    return decided


async def _history(ctx: RepoScope, found: FoundBuild) -> History:
    branch = await _default_branch(ctx)
    return await main_history(
        ctx.buildkite,
        ctx.cache,
        found.org,
        found.pipeline,
        branch,
        builds=ctx.config.retry.history_builds,
        clock=ctx.clock,
    )


async def _default_branch(ctx: RepoScope) -> str:
    key = ("default-branch", ctx.repo.full_name)
    if key not in ctx.cache:
        ctx.cache[key] = await changes.default_branch(ctx.gh, ctx.repo)
    return str(ctx.cache[key])


async def _tail(ctx: RepoScope, found: FoundBuild, job: dict[str, Any]) -> bytes | None:
    if job.get("state") == "expired" or not job.get("started_at"):
        return None  # it never ran: there is no log to read
    return await ctx.buildkite.job_log_tail(
        found.org, found.pipeline, found.number, str(job["id"]), max_bytes=LOG_TAIL_BYTES
    )


async def images_note(ctx: RepoScope, found: FoundBuild, verdicts: Sequence[Verdict]) -> str | None:
    """The registry's table for the build, when a job of it could not pull its image:
    the proof a retry would not help (retry-flaky and landing both show it)."""
    if not any(v.failure_class is FailureClass.IMAGE_MISSING for v in verdicts):
        return None
    check = await check_build(ctx, found.build)
    return image_table(check) if check.problem is None else check.problem
