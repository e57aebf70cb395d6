"""The failed jobs landing lists and retries: one row per job, and a retry recorded like
retry-flaky's (the same per-step cap sees both)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from bot.buildkite.client import BuildkiteClient
from bot.context.scope import RepoScope
from bot.core import metrics
from bot.failures.builds import FoundBuild
from bot.failures.classify import Verdict
from bot.failures.retries import retry_counted
from bot.landing import text as landing_text
from bot.store.kinds import Kind

log = logging.getLogger(__name__)


def _bk(ctx: RepoScope) -> BuildkiteClient:
    assert ctx.bk is not None, "a finished build arrives only when Buildkite is configured"
    return ctx.bk


def job_row(job: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "job_id": str(job["id"]),
        "name": str(job.get("name") or job.get("step_key") or job["id"]),
        "url": str(job.get("web_url") or ""),
        "step_key": job.get("step_key"),
        "class": str(job.get("state")),
        "evidence": f"exit status {job.get('exit_status')}",
        "rule": None,
    }


def judged_row(job: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    row = job_row(job)
    row.update(
        {"class": verdict.failure_class.value, "evidence": verdict.evidence, "rule": verdict.rule}
    )
    return row


async def retry_job(
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
