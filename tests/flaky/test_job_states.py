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
    canceled_while_running,
    failed_only_by_jobs_that_never_ran,
    failed_without_a_failure_of_its_own,
    is_canceled_job,
    is_failure,
    is_hard_failure,
    never_ran,
    not_finished,
    ran_and_failed,
)
from bot.failures.builds import canceled_jobs, hard_failures
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


# state, started → never ran, ran and failed, not finished, hard failure (did not pass
# although it ran); a job canceled while it ran is the one hard failure that is no
# failure (see the canceled tests below)
TABLE = [
    ("passed", True, False, False, False, False),
    ("unblocked", False, False, False, False, False),
    ("failed", True, False, True, False, True),
    ("timed_out", True, False, True, False, True),
    ("canceled", True, False, False, False, True),
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
    canceled = state == "canceled" and started
    assert is_failure(found) is (hard and not canceled)
    assert hard_failures({"jobs": [found]}) == ([found] if hard and not canceled else [])
    assert canceled_while_running(found) is canceled
    assert canceled_jobs({"jobs": [found]}) == ([found] if canceled else [])


@pytest.mark.parametrize("kind", ["waiter", "manual", "trigger"])
def test_only_script_jobs_are_hard_failures(kind: str) -> None:
    assert not is_hard_failure({**job("failed"), "type": kind})
    assert is_hard_failure({key: value for key, value in job("failed").items() if key != "type"})


def test_soft_failed_and_retried_jobs_are_not_hard_failures() -> None:
    assert not is_hard_failure(job("failed", soft_failed=True))
    assert not is_hard_failure(job("timed_out", retried=True))
    assert not is_hard_failure(job("expired", retried=True))
    assert not is_hard_failure(job("canceled", started=True, retried=True))
    assert not is_hard_failure(job("canceled", started=True, soft_failed=True))


def test_an_unknown_state_is_neither_failed_nor_passed_nor_never_run() -> None:
    for state in ("finished", "", "FAILED"):
        found = job(state, started=True)
        assert not never_ran(found)
        assert not ran_and_failed(found)
        assert not not_finished(found)
        assert not is_hard_failure(found)
    # so a failed build showing one is not waited out: it is left to humans
    assert not failed_only_by_jobs_that_never_ran([job("broken"), job("finished", started=True)])


def test_a_job_canceled_while_it_ran_is_shown_as_canceled_and_is_no_failure() -> None:
    stopped = job("canceled", started=True, finished_at=STARTED)
    assert is_canceled_job(stopped)
    assert not is_failure(stopped)
    assert is_hard_failure(stopped)  # it did not pass: a build with it is not green
    assert not ran_and_failed(stopped)
    assert not never_ran(stopped)
    # canceled before it started: it never ran, and is not shown at all
    assert not is_canceled_job(job("canceled", started=False))
    # a retried one is no longer the step's attempt; a block or trigger job runs no script
    assert not is_canceled_job(job("canceled", started=True, retried=True))
    assert not is_canceled_job(job("canceled", started=True, type="trigger"))
    # still being canceled: not finished, not shown yet
    assert not is_canceled_job(job("canceling"))
    build = {"jobs": [stopped, job("failed"), job("canceled", started=False)]}
    assert canceled_jobs(build) == [stopped]
    assert hard_failures(build) == [build["jobs"][1]]
    assert canceled_jobs({}) == []


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
    assert not failed_only_by_jobs_that_never_ran([job("broken"), job("failed", type="trigger")])
    # nothing in the way of green at all: not this case either
    assert not failed_only_by_jobs_that_never_ran([job("passed")])
    assert not failed_only_by_jobs_that_never_ran([])


def test_a_build_failed_only_by_canceled_jobs_has_no_failure_of_its_own() -> None:
    assert failed_only_by_jobs_that_never_ran is failed_without_a_failure_of_its_own
    canceled = job("canceled", started=True)
    assert failed_without_a_failure_of_its_own([job("passed"), canceled])
    assert failed_without_a_failure_of_its_own([job("broken"), canceled])
    # beside a failure of its own, a canceled job does not hide it
    assert not failed_without_a_failure_of_its_own([canceled, job("failed")])
    assert not failed_without_a_failure_of_its_own([canceled, job("expired")])


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
        canceled_while_running(found),
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
        assert (
            ran_and_failed(found)
            or found["state"] == job_states.EXPIRED
            or canceled_while_running(found)
        )
    assert is_failure(found) is (is_hard_failure(found) and not canceled_while_running(found))
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
        assert not any(is_failure(found) for found in jobs)
        assert any(
            never_ran(found) or canceled_while_running(found) or not_finished(found)
            for found in jobs
        )
    if is_failure(extra):
        assert not failed_only_by_jobs_that_never_ran([*jobs, extra])
    if extra["state"] in PASSED_STATES or extra["retried"]:
        assert failed_only_by_jobs_that_never_ran([*jobs, extra]) is verdict
