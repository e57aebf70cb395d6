"""Buildkite's job states, sorted once by what they mean for a failure decision.

retry-flaky, landing and main-branch history all ask "did this job fail?", and
they must answer alike: a job that never ran (its step's conditions kept it
from running, a dependency failed so it never will, or it was canceled before
an agent took it) is not a failure of its step, and retrying it would not make
the step's code run either. The one exception is ``expired``: the job never
ran because no agent took it in time, which is Buildkite's or the fleet's
failure, not the step's, and a retry is exactly what fixes it.

A job canceled *while it ran* is no failure either: a person (or Buildkite on
their behalf: a newer build of the branch, ``cancel_on_build_failing``) stopped
code that had not failed, and Buildkite does not fail a build for it. Such a job
is its own kind (``is_canceled_job``): shown apart as canceled, never counted
among the failures, never retried (that would overrule whoever canceled it), and
no run of its step on main. When it was canceled is its ``finished_at``; who
canceled it the REST API does not say (neither the job nor the build JSON has a
canceller; only GraphQL's build has ``canceledBy``), so the bot never names one.
So ``is_failure`` (what failed: listed, counted, perhaps retried) leaves it out,
while ``is_hard_failure`` (did a job that ran not pass?) keeps it: a canceled job
did not pass, and a build with one is not green.

The states are those of the REST API's ``job.state``. A state not listed here
(a new one Buildkite adds, or GraphQL's generic ``finished``) is none of
passed, failed or never-ran: the functions below treat it as something to
leave to humans, never as a failure to retry nor as a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PASSED = "passed"
CANCELED = "canceled"
EXPIRED = "expired"
SCRIPT = "script"

# Done, and in the way of nothing.
PASSED_STATES = frozenset(
    {
        "passed",  # the command ran and exited 0
        # a block step someone released: it has nothing to run, and it let the build go on
        "unblocked",
    }
)

# The command ran on an agent and did not pass: the job's own outcome, a failure.
# A job canceled while it ran is not one (see ``canceled_while_running``).
RAN_AND_FAILED_STATES = frozenset(
    {
        "failed",  # the command exited non-zero, or the agent under it was lost
        "timed_out",  # it ran past the step's timeout: it did run, and did not finish
    }
)

# Either: a cancel before an agent started the job means it never ran; a cancel of a
# running job stopped code that did run, and is no failure of it either. Only
# ``started_at`` tells the two apart.
CANCELED_STATES = frozenset({CANCELED})

# Finished without ever running on an agent.
NEVER_RAN_STATES = frozenset(
    {
        "broken",  # the step's conditions (`if:`, a failed dependency) mean it cannot run
        "skipped",  # Buildkite or the pipeline skipped it before it ran
        "expired",  # no agent took it before its scheduled-job expiry (infra: see below)
        "waiting_failed",  # was behind a wait step when the build failed: never released
        "blocked_failed",  # was behind a block step when the build failed: never released
        "unblocked_failed",  # a block step still blocked when the build failed
    }
)

# Never ran for want of an agent: not the step's doing, so unlike the rest of
# NEVER_RAN_STATES a failure after all, and one a retry fixes (classified infra).
NO_AGENT_STATES = frozenset({EXPIRED})

# Not finished yet: no verdict, whatever the build's state says so far.
NOT_FINISHED_STATES = frozenset(
    {
        "pending",  # just created, no state of its own yet
        "waiting",  # behind a wait step that has not finished
        "blocked",  # behind a block step no one has released
        "limiting",  # being checked against its concurrency group
        "limited",  # waiting for others of its concurrency group to finish
        "scheduled",  # waiting for an agent
        "assigned",  # given to an agent that has not accepted it yet
        "accepted",  # accepted by an agent, not started yet
        "running",  # the command is running
        "canceling",  # being canceled: it ends up canceled
        "timing_out",  # past its timeout, being stopped: it ends up timed_out
    }
)

DOCUMENTED_STATES = (
    PASSED_STATES | RAN_AND_FAILED_STATES | CANCELED_STATES | NEVER_RAN_STATES | NOT_FINISHED_STATES
)


def state(job: Mapping[str, Any]) -> str:
    return str(job.get("state") or "")


def is_script(job: Mapping[str, Any]) -> bool:
    """A command step's job. Wait, block (``manual``) and trigger jobs run no script of
    their own, so they are never a script failure. A job without a type is a script,
    as in Buildkite's webhooks and older payloads."""
    return str(job.get("type", SCRIPT)) == SCRIPT


def started(job: Mapping[str, Any]) -> bool:
    return bool(job.get("started_at"))


def never_ran(job: Mapping[str, Any]) -> bool:
    """Finished without running on an agent (``expired`` included: see ``is_failure``)."""
    if state(job) in CANCELED_STATES:
        return not started(job)
    return state(job) in NEVER_RAN_STATES


def ran_and_failed(job: Mapping[str, Any]) -> bool:
    """The command ran and failed by itself (soft-failed or not): a canceled job did not."""
    return state(job) in RAN_AND_FAILED_STATES


def canceled_while_running(job: Mapping[str, Any]) -> bool:
    """Canceled after an agent had started it: it ran, and someone stopped it."""
    return state(job) in CANCELED_STATES and started(job)


def is_canceled_job(job: Mapping[str, Any]) -> bool:
    """A script job canceled while it ran, and not retried since: the one to show as
    canceled (never as a failure, never counted, never retried). One canceled before
    it started never ran, and is not shown at all."""
    return is_script(job) and not job.get("retried") and canceled_while_running(job)


def not_finished(job: Mapping[str, Any]) -> bool:
    return state(job) in NOT_FINISHED_STATES


def _counts(job: Mapping[str, Any]) -> bool:
    """A script job's current attempt that can fail its build: not soft-failed (it does
    not fail the build), not already retried (its retry is the attempt that counts now)."""
    return is_script(job) and not job.get("soft_failed") and not job.get("retried")


def is_failure(job: Mapping[str, Any]) -> bool:
    """A script job that failed and counts: it ran and failed, or expired waiting for an
    agent. What is listed as failed, counted against the cap and perhaps retried; a job
    canceled while it ran is not one."""
    return _counts(job) and (ran_and_failed(job) or state(job) in NO_AGENT_STATES)


def is_hard_failure(job: Mapping[str, Any]) -> bool:
    """A job that counts and did not pass although it ran (or expired): a failure, or a
    job canceled while it ran. What keeps a build from being green where every job that
    ran must have passed (a blocked build landing lands); never what to list as failed,
    count or retry: that is ``is_failure``."""
    return is_failure(job) or (_counts(job) and canceled_while_running(job))


def _no_failure(job: Mapping[str, Any]) -> bool:
    """In the way of a green build without having failed: it never ran (and not for want
    of an agent), someone canceled it, or it has not finished."""
    return (
        (never_ran(job) and state(job) not in NO_AGENT_STATES)
        or canceled_while_running(job)
        or not_finished(job)
    )


def failed_without_a_failure_of_its_own(jobs: Iterable[Mapping[str, Any]]) -> bool:
    """No failure among the current attempts, and every one in the way of a green build
    never ran, was canceled, or has not finished: a build in this shape failed because
    of another job's outcome or a person's cancel, and has no failure of its own that a
    retry could fix."""
    current = [job for job in jobs if not job.get("retried")]
    if any(is_failure(job) for job in current):
        return False
    in_the_way = [
        job for job in current if not job.get("soft_failed") and state(job) not in PASSED_STATES
    ]
    return bool(in_the_way) and all(_no_failure(job) for job in in_the_way)


# The name landing calls it by: canceled jobs, too, are no failure of the build's own.
failed_only_by_jobs_that_never_ran = failed_without_a_failure_of_its_own
