"""`@bot retry-flaky`: retry only the failed jobs that look flaky or infra-caused.

Every decision is recorded (who asked, why, each job's class and evidence, the
new job) before the sticky comment is written from those records, so a
repeated command, a webhook redelivery or a crash in between never retries a
job twice and always leaves one comment per PR that tells the whole story.

This module runs one command: permission, the PR's builds (``builds``), each
failure's verdict (``verdicts``) and the jobs someone canceled while they ran (shown
apart as canceled, never counted nor retried), or a forced retry of one step; the
plan is then recorded and carried out (``plan``) and shown on the sticky comment
(``sticky``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.comments.replies import reply_once
from bot.context.scope import RepoScope
from bot.failures.builds import FoundBuild, canceled_jobs, hard_failures, pr_builds
from bot.failures.verdicts import classify_failures, images_note
from bot.github import neutralise
from bot.github.permissions import Permission, decide, has_write, permission_level
from bot.retry import text as retry_text
from bot.retry.plan import carry_out, plan_and_carry_out
from bot.retry.request import Retried, RetryFlakyOutcome, RetryRequest
from bot.retry.rows import canceled_row, decided_row
from bot.retry.sticky import show_command
from bot.store.kinds import Kind


async def run_retry_flaky(ctx: RepoScope, request: RetryRequest) -> Retried:
    """Handle one command comment; returns a one-line summary for the log."""
    command_key = f"{ctx.repo.full_name}#{request.comment_id}"
    if await ctx.store.get_state(Kind.RETRY_COMMAND, command_key) is not None:
        return Retried(RetryFlakyOutcome.HANDLED_ALREADY)
    async with ctx.locks.hold(f"{ctx.repo.full_name}#pr{request.pr}"):
        plan = await ctx.store.get_state(Kind.RETRY_PLAN, command_key)
        if plan is not None:
            outcome = await carry_out(ctx, request, plan)
        else:
            outcome = await _run_locked(ctx, request)
        await ctx.store.put_state(Kind.RETRY_COMMAND, command_key, {"outcome": str(outcome)})
        await ctx.store.delete_state(Kind.RETRY_PLAN, command_key)
        return outcome


async def _run_locked(ctx: RepoScope, request: RetryRequest) -> Retried:
    if ctx.config.buildkite is None:
        return await _refuse(ctx, request, retry_text.REFUSE_NOT_CONFIGURED)
    pull = await _pull(ctx, request.pr)
    head = str(pull["head"]["sha"])
    refusal = await _permission_refusal(ctx, request, pull)
    if refusal is not None:
        return await _refuse(ctx, request, refusal)
    builds = await pr_builds(ctx, head, request.pr)
    if not builds:
        return await _refuse(ctx, request, retry_text.REFUSE_NO_BUILD.format(head7=head[:7]))
    failed = [(found, job) for found in builds for job in hard_failures(found.build)]
    if request.forced:
        return await _force(ctx, request, builds, failed)
    limit = ctx.config.retry.max_failed_jobs
    if len(failed) > limit:
        note = retry_text.TOO_MANY_FAILED.format(count=len(failed), limit=limit)
        await show_command(ctx, request, builds, rows=[], note=note)
        return Retried(RetryFlakyOutcome.TOO_MANY_FAILED, f"{len(failed)} failed jobs")
    decided = []
    for found in builds:
        jobs = [job for owner, job in failed if owner is found]
        verdicts = await classify_failures(ctx, found, jobs, head) if jobs else []
        decided += [(found, job, verdict) for job, verdict in verdicts]
    now_head = str((await _pull(ctx, request.pr))["head"]["sha"])
    if now_head != head:
        reason = retry_text.REFUSE_HEAD_MOVED.format(old7=head[:7], new7=now_head[:7])
        return await _refuse(ctx, request, reason)
    items = [(found, *decided_row(job, verdict)) for found, job, verdict in decided]
    # Canceled jobs are shown apart, after the failures: not counted above, not retried.
    items += [(found, *canceled_row(job)) for found in builds for job in canceled_jobs(found.build)]
    notes = [
        await images_note(ctx, found, [v for owner, _job, v in decided if owner is found])
        for found in builds
    ]
    shown = "\n\n".join(n for n in notes if n)
    return await plan_and_carry_out(ctx, request, builds, items, forced=None, note=shown or None)


async def _pull(ctx: RepoScope, number: int) -> dict[str, Any]:
    pull: dict[str, Any] = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}", url_vars=ctx.repo.vars(number=str(number))
    )
    return pull


async def _permission_refusal(
    ctx: RepoScope, request: RetryRequest, pull: dict[str, Any]
) -> str | None:
    level = await permission_level(ctx.gh, ctx.repo, request.login)
    if request.forced and not has_write(level):
        return retry_text.REFUSE_FORCE_PERMISSION
    labels = {str(label["name"]) for label in pull.get("labels") or []}
    decision = decide(
        Permission.WRITE_OR_READY_AUTHOR,
        level=level,
        is_author=str(pull["user"]["login"]).lower() == request.login.lower(),
        labels=labels,
        ready_label=ctx.config.retry.author_label,
    )
    return None if decision.allowed else decision.reason


async def _force(
    ctx: RepoScope,
    request: RetryRequest,
    builds: Sequence[FoundBuild],
    failed: Sequence[tuple[FoundBuild, dict[str, Any]]],
) -> Retried:
    step = request.command.args[0] if request.command.args else None
    if step is None:
        return await _refuse(ctx, request, retry_text.REFUSE_FORCE_NEEDS_STEP)
    if not request.reason:
        return await _refuse(ctx, request, retry_text.REFUSE_FORCE_NEEDS_REASON)
    match = next(((found, job) for found, job in failed if job.get("step_key") == step), None)
    if match is None:
        numbers = ", ".join(f"#{found.number}" for found in builds)
        reason = retry_text.REFUSE_FORCE_UNKNOWN_STEP.format(
            step=neutralise.code(step), build=numbers
        )
        return await _refuse(ctx, request, reason)
    found, job = match
    row: dict[str, Any] = {
        "job_id": str(job["id"]),
        "name": str(job.get("name") or step),
        "url": str(job.get("web_url") or ""),
        "step_key": step,
        "class": "forced",
        "evidence": f"forced by @{request.login}",
        "evidence_link": None,
        "rule": None,
    }
    return await plan_and_carry_out(ctx, request, builds, [(found, row, True)], forced=step)


async def _refuse(ctx: RepoScope, request: RetryRequest, reason: str) -> Retried:
    body = retry_text.REPLY_REFUSED.format(
        login=request.login, command=neutralise.code(request.command.line.strip()), reason=reason
    )
    await reply_once(ctx.gh, ctx.store, ctx.repo, request.pr, request.comment_id, body)
    return Retried(RetryFlakyOutcome.REFUSED, reason)
