"""A failed job's row of the retry-flaky sticky, as decided: pure, so the landing's
comment shows canceled jobs in the same words without reaching into the retry flow."""

from __future__ import annotations

from typing import Any

from bot.failures.classify import Verdict, canceled_verdict
from bot.retry import text as retry_text


def decided_row(job: dict[str, Any], verdict: Verdict) -> tuple[dict[str, Any], bool]:
    """A job's row of the sticky comment as decided, and whether to retry it."""
    row: dict[str, Any] = {
        "job_id": str(job["id"]),
        "name": str(job.get("name") or job.get("step_key") or job["id"]),
        "url": str(job.get("web_url") or ""),
        "step_key": job.get("step_key"),
        "class": verdict.failure_class.value,
        "evidence": verdict.evidence,
        "evidence_link": verdict.link,
        "rule": verdict.rule,
    }
    if not verdict.retry:
        why = retry_text.WHY.get(verdict.failure_class.value, verdict.failure_class.value)
        row["action"] = retry_text.ACTION_NOT_RETRIED.format(why=why)
    return row, verdict.retry


def canceled_row(job: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A job canceled while it ran: its row says so and when; never retried."""
    return decided_row(job, canceled_verdict(job.get("finished_at")))
