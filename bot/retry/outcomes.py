"""The outcomes of jobs `retry-flaky` retried: a finished retry's passed/failed
recorded on its ``Kind.RETRY_JOB`` document (`record_outcome`), then put on the rows of the
PR's sticky comment (`with_outcomes`) for ``bot.retry.sticky`` to write.

The two happen in different deliveries: the record in the job's ``job.finished`` (the
pipeline's subject), the comment in a follow-up under the PR's subject, where the
command that writes the same comment runs too (``bot.context.followups``). So the
comment has one writer at a time across replicas, and ``job.finished`` reads no GitHub.
"""

from __future__ import annotations

from typing import Any

from bot.buildkite import job_states
from bot.github.changes import Repo
from bot.retry import text as retry_text
from bot.store.kinds import Kind
from bot.store.protocol import Store

# A retried job that finished in one of these failed again. ``canceled`` is not one:
# the state alone cannot tell whether it ran, and a cancel is someone's decision.
RETRY_FAILED_STATES = job_states.RAN_AND_FAILED_STATES | job_states.NO_AGENT_STATES


async def record_outcome(store: Store, job_id: str, state: str | None) -> tuple[str, int] | None:
    """A retried job finished in ``state``: record passed/failed and return (repo, pr) to
    refresh; None for a job the bot did not retry, or a state that is no outcome.

    An outcome recorded already is returned again: a rerun after a crash between the
    record and the follow-up's submission must still submit it (the follow-up's id
    makes a second submission a no-op)."""
    record = await store.get_state(Kind.RETRY_JOB, job_id)
    if record is None:
        return None
    if record.get("outcome") is not None:
        return str(record["repo"]), int(record["pr"])
    # Only a retry that ran (or expired: infra again) has an outcome: one that never
    # ran says nothing about whether the step is flaky.
    if state != job_states.PASSED and state not in RETRY_FAILED_STATES:
        return None
    record["outcome"] = "passed" if state == job_states.PASSED else "failed"
    await store.put_state(Kind.RETRY_JOB, job_id, record)
    return str(record["repo"]), int(record["pr"])


async def with_outcomes(store: Store, repo: Repo, pr: int) -> dict[str, Any] | None:
    """The PR's sticky document with the recorded outcomes of the bot's retries on its
    rows, or None when the PR has no retry-flaky comment (a landing's retry, say)."""
    doc = await store.get_state(Kind.RETRY_PR, f"{repo.full_name}#{pr}")
    if doc is None:
        return None
    for row in doc.get("rows") or []:
        new_id = row.get("new_job_id")
        if not new_id:
            continue
        record = await store.get_state(Kind.RETRY_JOB, str(new_id))
        if record is None or record.get("outcome") is None:
            continue
        row["outcome"] = (
            retry_text.OUTCOME_PASSED
            if record["outcome"] == "passed"
            else retry_text.OUTCOME_FAILED
        )
    return doc
