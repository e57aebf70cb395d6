"""The outcomes of jobs `retry-flaky` retried: a finished retry's passed/failed
recorded on its ``Kind.RETRY_JOB`` document (`record_outcome`), then shown on the PR's
sticky comment (`refresh_outcomes`)."""

from __future__ import annotations

from gidgethub.abc import GitHubAPI

from bot.buildkite import job_states
from bot.github.changes import Repo
from bot.retry import text as retry_text
from bot.retry.sticky import write_sticky
from bot.store.kinds import Kind
from bot.store.protocol import Store

# A retried job that finished in one of these failed again. ``canceled`` is not one:
# the state alone cannot tell whether it ran, and a cancel is someone's decision.
RETRY_FAILED_STATES = job_states.RAN_AND_FAILED_STATES | job_states.NO_AGENT_STATES


async def record_outcome(store: Store, job_id: str, state: str | None) -> tuple[str, int] | None:
    """A retried job finished in ``state``: record passed/failed and return (repo, pr) to
    refresh (the handler read both from the webhook's ``job``)."""
    record = await store.get_state(Kind.RETRY_JOB, job_id)
    if record is None or record.get("outcome") is not None:
        return None
    # Only a retry that ran (or expired: infra again) has an outcome: one that never
    # ran says nothing about whether the step is flaky.
    if state != job_states.PASSED and state not in RETRY_FAILED_STATES:
        return None
    record["outcome"] = "passed" if state == job_states.PASSED else "failed"
    await store.put_state(Kind.RETRY_JOB, job_id, record)
    return str(record["repo"]), int(record["pr"])


async def refresh_outcomes(gh: GitHubAPI, store: Store, repo: Repo, pr: int) -> None:
    """Re-render the sticky comment with the recorded outcomes of the bot's retries."""
    key = f"{repo.full_name}#{pr}"
    doc = await store.get_state(Kind.RETRY_PR, key)
    if doc is None:
        return
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
    await write_sticky(gh, store, repo, pr, doc)
