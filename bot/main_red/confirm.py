"""The optional confirmation (``main_red.confirm``): before a step is called broken, its
first red job is retried once — never more — and its retry must fail too.

A retry that passes needs nothing here: the judgement sees that run as passed on retry,
and the step is not broken. The retry is recorded once Buildkite confirmed it; Buildkite
also marks the original job ``retried_in_job_id``, so a rerun that lost the record still
sees the retry and never asks for another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.buildkite import job_states
from bot.buildkite.errors import JobNotRetryable
from bot.context.scope import RepoScope
from bot.main_red.signals import StepSignal, first_red
from bot.main_red.state import SignalDoc

CONFIRMING = "confirming: the first red job retried once"
NOTE_RETRY_ENDED = "the confirming retry ended {state} (no verdict): judged without it"


async def confirmed(
    ctx: RepoScope,
    org: str,
    pipeline: str,
    signal: StepSignal,
    builds: Mapping[int, Mapping[str, Any]],
    doc: SignalDoc,
) -> bool:
    """With ``main_red.confirm``: the first red job retried once (never more), and its
    retry finished failing. A retry that passed is seen by the judgement itself (the run
    passed on retry: not broken), so only "failed again" or "cannot retry" get here."""
    config = ctx.config.main_red
    first = first_red(signal)
    if config is None or not config.confirm or first is None:
        return True
    state = doc.extra.get("confirm") or {}
    if state.get("build") == first.build_number and state.get("done"):
        return True
    jobs = list((builds.get(first.build_number) or {}).get("jobs") or ())
    original: Mapping[str, Any] = next(
        (job for job in jobs if str(job.get("id")) == first.job_id), {}
    )
    retry_id = original.get("retried_in_job_id") or state.get("retry")
    if not retry_id:
        try:
            new = await ctx.buildkite.retry_job(org, pipeline, first.build_number, first.job_id)
        except JobNotRetryable as exc:
            doc.extra["confirm"] = {"build": first.build_number, "done": True, "note": exc.message}
            return True
        # Recorded once Buildkite confirmed it: a rerun sees the retry (here or on the
        # original job's ``retried_in_job_id``) and never retries again.
        doc.extra["confirm"] = {"build": first.build_number, "retry": str(new["id"])}
        return False
    retried = next((job for job in jobs if str(job.get("id")) == str(retry_id)), None)
    if retried is not None and _ended_without_verdict(retried):
        # Someone canceled the retry (or no agent took it): it will never pass or fail, and
        # asking again would be a second retry. Judged as if confirmation were off, as for
        # a job that cannot be retried.
        note = NOTE_RETRY_ENDED.format(state=job_states.state(retried))
        doc.extra["confirm"] = {"build": first.build_number, "done": True, "note": note}
        return True
    if retried is None or not (
        retried.get("state") == job_states.PASSED or job_states.ran_and_failed(retried)
    ):
        doc.extra["confirm"] = {"build": first.build_number, "retry": str(retry_id)}
        return False  # still running: its build finishing again brings it here
    doc.extra["confirm"] = {"build": first.build_number, "retry": str(retry_id), "done": True}
    return True


def _ended_without_verdict(job: Mapping[str, Any]) -> bool:
    """Finished, but neither passed nor failed: canceled (before or while it ran), expired."""
    return not (
        job_states.not_finished(job)
        or job.get("state") == job_states.PASSED
        or job_states.ran_and_failed(job)
    )
