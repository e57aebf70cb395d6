"""Retrying one Buildkite job, counted against its step (`retry_counted`), and finding
the job that retried another (`retried_as`). Shared by retry-flaky and landing.

A step's count (``Kind.RETRY_STEP``) lists the jobs it counted, so a rerun after a
crash never counts, nor retries, a job twice.
"""

from __future__ import annotations

from typing import Any

from bot.buildkite.client import BuildkiteClient
from bot.buildkite.errors import JobNotRetryable
from bot.failures.builds import FoundBuild
from bot.github import effects
from bot.store.kinds import Kind
from bot.store.protocol import Store


async def retry_counted(
    bk: BuildkiteClient, store: Store, found: FoundBuild, job_id: str, step_key: str
) -> dict[str, Any] | str:
    """Retry one job, counted against its step: the new job, or Buildkite's reason for
    refusing. Shared by retry-flaky and landing.

    The job is counted (by its id, so a rerun does not count it twice) before the
    call: after a crash, Buildkite's ``retried`` flag and this record together say
    what happened, so the job is never retried twice. A lost answer, or an "already
    retried" refusal, is checked against the job's ``retried_in_job_id``: a retry an
    earlier attempt did make is that attempt's answer.
    """

    async def find() -> dict[str, Any] | None:
        return await retried_as(bk, found, job_id)

    if not await _count_retry(store, step_key, job_id, +1):
        # Counted by an attempt that did not finish: it may have retried the job.
        earlier = await find()
        if earlier is not None:
            return earlier
    try:
        return await effects.look_after_failure(
            lambda: bk.retry_job(found.org, found.pipeline, found.number, job_id), find
        )
    except JobNotRetryable as exc:
        existing = await find()
        if existing is not None:
            return existing
        await _count_retry(store, step_key, job_id, -1)
        return exc.message
    except Exception:
        await _count_retry(store, step_key, job_id, -1)  # nothing happened
        raise


async def _count_retry(store: Store, step_key: str, job_id: str, change: int) -> bool:
    """Count a retry of ``job_id`` against its step (+1), or take it back (-1); False
    when there was nothing to change (counted already, or never counted)."""
    doc = await store.get_state(Kind.RETRY_STEP, step_key) or {}
    jobs = [str(job) for job in doc.get("jobs") or []]
    if (job_id in jobs) == (change > 0):
        return False
    jobs = [*jobs, job_id] if change > 0 else [job for job in jobs if job != job_id]
    count = max(int(doc.get("count", 0)) + change, 0)
    await store.put_state(Kind.RETRY_STEP, step_key, {"count": count, "jobs": jobs})
    return True


async def retried_as(bk: BuildkiteClient, found: FoundBuild, job_id: str) -> dict[str, Any] | None:
    """The job that retried ``job_id``, if Buildkite has one (``retried_in_job_id``)."""
    build = await bk.build(found.org, found.pipeline, found.number, include_retried_jobs=True)
    jobs = {str(job.get("id")): job for job in build.get("jobs") or [] if isinstance(job, dict)}
    new_id = (jobs.get(job_id) or {}).get("retried_in_job_id")
    return jobs.get(str(new_id)) if new_id else None
