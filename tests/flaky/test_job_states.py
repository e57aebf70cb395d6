"""Which Buildkite jobs failed: every documented job state, and the laws between the sets."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.buildkite import job_states
from bot.buildkite.job_states import (
    CANCELED_STATES,
    DOCUMENTED_STATES,
    NEVER_RAN_STATES,
    NO_AGENT_STATES,
    NOT_FINISHED_STATES,
    PASSED_STATES,
    RAN_AND_FAILED_STATES,
    failed_only_by_jobs_that_never_ran,
    is_hard_failure,
    never_ran,
    not_finished,
    ran_and_failed,
)
from bot.retry.builds import hard_failures
from sandbox.buildkite_model import JOB_STATES as STAND_IN_STATES

STARTED = "2025-05-12T10:00:00.000Z"
# The REST API's job states, as Buildkite documents them.
DOCUMENTED = {
    "pending",
    "waiting",
    "waiting_failed",
    "blocked",
    "blocked_failed",
    "unblocked",
    "unblocked_failed",
    "limiting",
    "limited",
    "scheduled",
    "assigned",
    "accepted",
    "running",
    "passed",
    "failed",
    "canceling",
    "canceled",
    "timing_out",
    "timed_out",
    "skipped",
    "broken",
    "expired",
}
SETS = (
    PASSED_STATES,
    RAN_AND_FAILED_STATES,
    CANCELED_STATES,
    NEVER_RAN_STATES,
    NOT_FINISHED_STATES,
)


def job(state: str, *, started: bool | None = None, **fields: Any) -> dict[str, Any]:
    """A script job as the REST API shows it; ``started`` None: as the state implies."""
    if started is None:
        started = state in RAN_AND_FAILED_STATES or state in {"passed", "running", "canceling"}
    return {"type": "script", "state": state, "started_at": STARTED if started else None, **fields}


# state, started → never ran, ran and failed, not finished, hard failure
TABLE = [
    ("passed", True, False, False, False, False),
    ("unblocked", False, False, False, False, False),
    ("failed", True, False, True, False, True),
    ("timed_out", True, False, True, False, True),
    ("canceled", True, False, True, False, True),
    ("canceled", False, True, False, False, False),
    ("broken", False, True, False, False, False),
    ("skipped", False, True, False, False, False),
    ("expired", False, True, False, False, True),
    ("waiting_failed", False, True, False, False, False),
    ("blocked_failed", False, True, False, False, False),
    ("unblocked_failed", False, True, False, False, False),
    ("pending", False, False, False, True, False),
    ("waiting", False, False, False, True, False),
    ("blocked", False, False, False, True, False),
    ("limiting", False, False, False, True, False),
    ("limited", False, False, False, True, False),
    ("scheduled", False, False, False, True, False),
    ("assigned", False, False, False, True, False),
    ("accepted", False, False, False, True, False),
    ("running", True, False, False, True, False),
    ("canceling", True, False, False, True, False),
    ("timing_out", True, False, False, True, False),
]


def test_the_sets_split_the_documented_states() -> None:
    assert DOCUMENTED_STATES == DOCUMENTED
    assert sum(len(s) for s in SETS) == len(DOCUMENTED)  # no state in two sets
    assert NO_AGENT_STATES <= NEVER_RAN_STATES
    assert {state for state, *_ in TABLE} == DOCUMENTED  # the table covers every state


def test_the_buildkite_stand_in_knows_exactly_the_documented_states() -> None:
    assert STAND_IN_STATES == DOCUMENTED_STATES


@pytest.mark.parametrize(("state", "started", "never", "failed", "unfinished", "hard"), TABLE)
def test_each_documented_state(
    state: str, started: bool, never: bool, failed: bool, unfinished: bool, hard: bool
) -> None:
    found = job(state, started=started)
    assert never_ran(found) is never
    assert ran_and_failed(found) is failed
    assert not_finished(found) is unfinished
    assert is_hard_failure(found) is hard
    assert hard_failures({"jobs": [found]}) == ([found] if hard else [])


@pytest.mark.parametrize("kind", ["waiter", "manual", "trigger"])
def test_only_script_jobs_are_hard_failures(kind: str) -> None:
    assert not is_hard_failure({**job("failed"), "type": kind})
    assert is_hard_failure({key: value for key, value in job("failed").items() if key != "type"})


def test_soft_failed_and_retried_jobs_are_not_hard_failures() -> None:
    assert not is_hard_failure(job("failed", soft_failed=True))
    assert not is_hard_failure(job("timed_out", retried=True))
    assert not is_hard_failure(job("expired", retried=True))


def test_an_unknown_state_is_neither_failed_nor_passed_nor_never_run() -> None:
    for state in ("finished", "", "FAILED"):
        found = job(state, started=True)
        assert not never_ran(found)
        assert not ran_and_failed(found)
        assert not not_finished(found)
        assert not is_hard_failure(found)
    # so a failed build showing one is not waited out: it is left to humans
    assert not failed_only_by_jobs_that_never_ran([job("broken"), job("finished", started=True)])


def test_a_build_failed_only_by_jobs_that_never_ran() -> None:
    retried_failure = job("failed", retried=True)
    assert failed_only_by_jobs_that_never_ran(
        [job("passed"), retried_failure, job("passed"), job("broken"), job("skipped")]
    )
    assert failed_only_by_jobs_that_never_ran([job("canceled", started=False)])
    assert failed_only_by_jobs_that_never_ran([job("waiting_failed", type="waiter")])
    assert failed_only_by_jobs_that_never_ran([job("broken"), job("failed", soft_failed=True)])
    # a job that failed by itself, one that expired (infra, retried), or a failed
    # trigger step (another build's failure) is a failure of this build's own
    assert not failed_only_by_jobs_that_never_ran([job("broken"), job("failed")])
    assert not failed_only_by_jobs_that_never_ran([job("broken"), job("expired")])
    assert not failed_only_by_jobs_that_never_ran([job("broken"), job("canceled", started=True)])
    assert not failed_only_by_jobs_that_never_ran([job("broken"), job("failed", type="trigger")])
    # nothing in the way of green at all: not this case either
    assert not failed_only_by_jobs_that_never_ran([job("passed")])
    assert not failed_only_by_jobs_that_never_ran([])


_STATES = st.one_of(st.sampled_from(sorted(DOCUMENTED)), st.text(max_size=12))
_JOBS = st.fixed_dictionaries(
    {
        "state": _STATES,
        "started_at": st.sampled_from([None, "", STARTED]),
        "type": st.sampled_from(["script", "waiter", "manual", "trigger"]),
        "soft_failed": st.booleans(),
        "retried": st.booleans(),
    }
)


@given(found=_JOBS)
def test_a_job_is_in_at_most_one_class(found: dict[str, Any]) -> None:
    classes = [
        found["state"] in PASSED_STATES,
        ran_and_failed(found),
        never_ran(found),
        not_finished(found),
    ]
    assert sum(classes) <= 1
    assert sum(classes) == 1 or found["state"] not in DOCUMENTED


@given(found=_JOBS)
def test_a_hard_failure_ran_and_failed_or_expired(found: dict[str, Any]) -> None:
    if is_hard_failure(found):
        assert found["type"] == "script"
        assert not found["soft_failed"]
        assert not found["retried"]
        assert ran_and_failed(found) or found["state"] == job_states.EXPIRED
    if never_ran(found) and found["state"] not in NO_AGENT_STATES:
        assert not is_hard_failure(found)
    if found["state"] == "canceled":
        assert never_ran(found) is (not found["started_at"])


@given(jobs=st.lists(_JOBS, max_size=8), extra=_JOBS)
def test_waiting_out_a_build_means_nothing_in_it_failed_by_itself(
    jobs: list[dict[str, Any]], extra: dict[str, Any]
) -> None:
    verdict = failed_only_by_jobs_that_never_ran(jobs)
    if verdict:
        assert not any(is_hard_failure(found) for found in jobs)
        assert any(never_ran(found) or not_finished(found) for found in jobs)
    if is_hard_failure(extra):
        assert not failed_only_by_jobs_that_never_ran([*jobs, extra])
    if extra["state"] in PASSED_STATES or extra["retried"]:
        assert failed_only_by_jobs_that_never_ran([*jobs, extra]) is verdict
