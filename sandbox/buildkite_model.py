"""The Buildkite stand-in's records and the meaning of their states.

Pipelines, builds, jobs, artifacts and annotations as plain records; which job
states count as finished, running, waiting or failing; and the build state
Buildkite derives from its jobs. The rules that create and move them are
``buildkite_state.World``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# Job states after which a job never changes again (bar a retry, which makes a new job).
JOB_FINISHED_STATES = frozenset(
    {
        "passed",
        "failed",
        "timed_out",
        "canceled",
        "skipped",
        "broken",
        "expired",
        "waiting_failed",
        "blocked_failed",
        "unblocked",
        "unblocked_failed",
    }
)
# Finished states no agent ever started: no started_at, no agent, no exit status.
JOB_NEVER_STARTED_STATES = JOB_FINISHED_STATES - {"passed", "failed", "timed_out", "canceled"}
# A job is canceled before or after an agent started it; JobSpec.started says which.
JOB_EITHER_STATES = frozenset({"canceled"})
# Job states in which an agent has taken the job (it has a started_at and an agent).
JOB_RUNNING_STATES = frozenset({"assigned", "accepted", "running", "canceling", "timing_out"})
# Job states before an agent takes the job.
JOB_WAITING_STATES = frozenset(
    {"pending", "waiting", "blocked", "limiting", "limited", "scheduled"}
)
JOB_STATES = JOB_FINISHED_STATES | JOB_RUNNING_STATES | JOB_WAITING_STATES
# Job states of a job that was never ready for an agent (held back by a wait or block
# step, or by its step's conditions): it has no runnable_at.
JOB_NOT_RUNNABLE_STATES = frozenset(
    {"pending", "waiting", "blocked", "broken", "waiting_failed", "blocked_failed"}
)
# Buildkite only lets these be retried (a passed job needs permit_on_passed, not modelled).
RETRYABLE_STATES = frozenset({"failed", "timed_out", "canceled", "expired", "broken"})
# A job in one of these, unless soft-failed, fails its build.
FAILING_JOB_STATES = frozenset({"failed", "timed_out", "expired"})
# A build stopped at a block step is "finished" too: Buildkite stamps finished_at and
# sends build.finished (with "blocked": true), then goes on once someone unblocks it.
BUILD_FINISHED_STATES = frozenset({"passed", "failed", "canceled", "skipped", "not_run", "blocked"})
BUILD_STATES = BUILD_FINISHED_STATES | {
    "scheduled",
    "running",
    "blocked",
    "canceling",
    "failing",
}


@dataclass
class Artifact:
    id: str
    job_id: str
    path: str
    data: bytes


@dataclass
class Annotation:
    id: str
    context: str
    style: str
    body: str
    created_at: float
    updated_at: float


@dataclass
class Pipeline:
    id: str
    slug: str
    name: str
    repository: str
    created_at: float


@dataclass
class Job:
    id: str
    build_id: str
    step_key: str
    name: str
    state: str
    exit_status: int | None
    signal_reason: str | None
    soft_failed: bool
    log: bytes
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    retried: bool = False
    retried_in_job_id: str | None = None
    retries_count: int | None = None
    retry_type: str | None = None
    parallel_group_index: int | None = None
    parallel_group_total: int | None = None
    # A step's `retry: manual: allowed: false` (vLLM sets it on some steps): Buildkite
    # then refuses every manual retry of its jobs.
    manual_retry_allowed: bool = True
    artifacts: list[Artifact] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.state in JOB_FINISHED_STATES

    def run_to(
        self,
        state: str,
        exit_status: int | None,
        log: bytes,
        now: float,
        *,
        started: bool | None = None,
    ) -> None:
        """Move the job into ``state``, stamping the times an agent would have set.

        A job no agent started keeps ``started_at`` unset and has no exit status,
        whatever ``exit_status`` says (Buildkite shows ``null``)."""
        if state not in JOB_STATES:
            raise ValueError(f"unknown job state {state!r}")
        ran = self._starts(state, started)
        self.state, self.log = state, log
        self.exit_status = exit_status if state in JOB_FINISHED_STATES and ran else None
        if ran:
            self.started_at = self.started_at or now
        if state in JOB_FINISHED_STATES:
            self.finished_at = now

    def _starts(self, state: str, started: bool | None) -> bool:
        if state in JOB_EITHER_STATES:
            return self.started_at is not None if started is None else started
        implied = state in JOB_RUNNING_STATES or (
            state in JOB_FINISHED_STATES and state not in JOB_NEVER_STARTED_STATES
        )
        if started is not None and started != implied:
            raise ValueError(f"a {state} job cannot have started={started}")
        return implied


@dataclass
class Build:
    id: str
    number: int
    sequence: int  # global creation order: lists are newest first across pipelines
    pipeline: Pipeline
    commit: str
    branch: str
    message: str
    pull_request: dict[str, str] | None
    state: str
    created_at: float
    jobs: list[Job] = field(default_factory=list)
    started_at: float | None = None
    finished_at: float | None = None
    annotations: list[Annotation] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # the build's env (TORCH_NIGHTLY=1)
    source: str = "webhook"  # "schedule" for a nightly build

    def latest_jobs(self) -> list[Job]:
        """The current attempt of each step: what Buildkite shows without retried jobs."""
        return [job for job in self.jobs if not job.retried]


def derive_build_state(jobs: Sequence[Job], *, started_before: bool = False) -> str:
    """The build state Buildkite would show for these current job attempts.

    A build that ever started never goes back to ``scheduled`` (a retry of its only
    job leaves it ``running``)."""
    failing = any(j.state in FAILING_JOB_STATES and not j.soft_failed for j in jobs)
    unfinished = [j for j in jobs if not j.finished]
    if unfinished:
        if failing:
            return "failing"
        if all(j.state == "blocked" for j in unfinished):
            return "blocked"  # everything else is done: the build waits for a person
        started = started_before or any(j.started_at is not None for j in jobs)
        return "running" if started else "scheduled"
    if failing:
        return "failed"
    if any(j.state == "canceled" for j in jobs):
        return "canceled"
    return "passed"


@dataclass(frozen=True)
class Transition:
    """A build whose state a change moved: ``finished`` when it just reached a final state."""

    build: Build
    before: str

    @property
    def finished(self) -> bool:
        return self.before != self.build.state and self.build.state in BUILD_FINISHED_STATES
