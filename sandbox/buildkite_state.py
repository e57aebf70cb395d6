"""The Buildkite stand-in's world: pipelines, builds, jobs, and the rules that move them.

Pure state and rules, no I/O: the server renders it as JSON and turns the
transitions these methods report into webhooks.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

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

ALREADY_RETRIED = "This job has already been retried"
NOT_RETRYABLE = "Only failed, timed out or canceled jobs can be retried"
DEFAULT_REPOSITORY = "https://github.com/vllm-project/vllm.git"


def _as_bytes(log: bytes | str) -> bytes:
    return log.encode() if isinstance(log, str) else bytes(log)


@dataclass
class JobSpec:
    """One job of a build a test creates (its first attempt)."""

    step_key: str
    name: str
    state: str = "passed"
    exit_status: int | None = 0
    signal_reason: str | None = None
    soft_failed: bool = False
    log: bytes | str = b""
    artifacts: Mapping[str, bytes] = field(default_factory=dict)
    # Whether an agent started the job: None as its state implies. Only a canceled job
    # can go either way (canceled while it ran, True; before an agent took it, the
    # default); any other contradiction of the state is an error.
    started: bool | None = None
    # One shard of a `parallelism: N` step: (index, N). Shards share the step key.
    parallel: tuple[int, int] | None = None


@dataclass(frozen=True)
class RetryOutcome:
    """What a retried job does once it runs."""

    state: str
    exit_status: int | None
    log: bytes
    after: Literal["immediately", "on_demand"]


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


class RetryRefused(Exception):
    """Answered as a 400 with Buildkite's message."""


class World:
    """Every pipeline, build and job of one organisation."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.pipelines: dict[str, Pipeline] = {}
        self.builds: list[Build] = []
        self.jobs: dict[str, Job] = {}
        self.artifacts: dict[str, Artifact] = {}
        self.outcomes: dict[str, RetryOutcome] = {}  # by job id or step key
        self.pending: dict[str, RetryOutcome] = {}  # on-demand outcomes, by new job id
        self._sequence = itertools.count(1)

    def add_pipeline(self, slug: str, name: str | None, repository: str) -> Pipeline:
        pipeline = Pipeline(str(uuid.uuid4()), slug, name or slug, repository, self.clock())
        self.pipelines[slug] = pipeline
        return pipeline

    def pipeline(self, slug: str) -> Pipeline:
        found = self.pipelines.get(slug)
        if found is None:
            raise KeyError(f"no pipeline {slug!r} in the Buildkite sandbox")
        return found

    def build(self, slug: str, number: int) -> Build:
        for build in self.builds:
            if build.pipeline.slug == slug and build.number == number:
                return build
        raise KeyError(f"no build {slug}#{number} in the Buildkite sandbox")

    def build_of(self, job: Job) -> Build:
        return next(build for build in self.builds if build.id == job.build_id)

    def job(self, job_id: str) -> Job:
        found = self.jobs.get(job_id)
        if found is None:
            raise KeyError(f"no job {job_id} in the Buildkite sandbox")
        return found

    def create_build(
        self,
        slug: str,
        *,
        commit: str,
        branch: str,
        jobs: Sequence[JobSpec],
        message: str,
        pull_request: Mapping[str, str] | None,
        state: str | None,
    ) -> Build:
        pipeline = self.pipeline(slug)
        if state is not None and state not in BUILD_STATES:
            raise ValueError(f"unknown build state {state!r}")
        now = self.clock()
        number = 1 + max((b.number for b in self.builds if b.pipeline is pipeline), default=0)
        pr = None
        if pull_request is not None:
            pr = {
                "id": str(pull_request["id"]),
                "base": pull_request.get("base", "main"),
                "repository": pull_request.get("repository", pipeline.repository),
            }
        build = Build(
            id=str(uuid.uuid4()),
            number=number,
            sequence=next(self._sequence),
            pipeline=pipeline,
            commit=commit,
            branch=branch,
            message=message,
            pull_request=pr,
            state="scheduled",
            created_at=now,
        )
        for spec in jobs:
            job = self._new_job(build, spec.step_key, spec.name, now)
            job.soft_failed, job.signal_reason = spec.soft_failed, spec.signal_reason
            if spec.parallel is not None:
                job.parallel_group_index, job.parallel_group_total = spec.parallel
            job.run_to(spec.state, spec.exit_status, _as_bytes(spec.log), now, started=spec.started)
            for path, data in spec.artifacts.items():
                artifact = Artifact(str(uuid.uuid4()), job.id, path, bytes(data))
                job.artifacts.append(artifact)
                self.artifacts[artifact.id] = artifact
        build.state = state or derive_build_state(build.latest_jobs())
        self._stamp(build, now)
        self.builds.append(build)
        return build

    def _new_job(self, build: Build, step_key: str, name: str, now: float) -> Job:
        job = Job(
            id=str(uuid.uuid4()),
            build_id=build.id,
            step_key=step_key,
            name=name,
            state="scheduled",
            exit_status=None,
            signal_reason=None,
            soft_failed=False,
            log=b"",
            created_at=now,
        )
        build.jobs.append(job)
        self.jobs[job.id] = job
        return job

    def _stamp(self, build: Build, now: float) -> None:
        if build.started_at is None and any(j.started_at for j in build.jobs):
            build.started_at = min(j.started_at or now for j in build.jobs if j.started_at)
        build.finished_at = now if build.state in BUILD_FINISHED_STATES else None

    def _refresh(self, build: Build) -> Transition:
        before = build.state
        started = build.started_at is not None
        build.state = derive_build_state(build.latest_jobs(), started_before=started)
        if build.state != before:
            self._stamp(build, self.clock())
        return Transition(build, before)

    # -- retries ----------------------------------------------------------------------------

    def set_outcome(self, key: str, outcome: RetryOutcome) -> None:
        if outcome.state not in JOB_STATES:
            raise ValueError(f"unknown job state {outcome.state!r}")
        self.outcomes[key] = outcome

    def retry(self, job: Job) -> tuple[Job, Transition]:
        """Buildkite's single-job retry: a new scheduled job; the old one is marked retried."""
        if job.retried:
            raise RetryRefused(ALREADY_RETRIED)
        if job.state not in RETRYABLE_STATES:
            raise RetryRefused(NOT_RETRYABLE)
        build = self.build_of(job)
        new = self._new_job(build, job.step_key, job.name, self.clock())
        new.retries_count = (job.retries_count or 0) + 1
        # A retry stays the same shard of the same step.
        new.parallel_group_index = job.parallel_group_index
        new.parallel_group_total = job.parallel_group_total
        new.retry_type = "manual"
        job.retried, job.retried_in_job_id = True, new.id
        outcome = self.outcomes.get(job.id) or self.outcomes.get(job.step_key)
        if outcome is not None:
            self.pending[new.id] = outcome
        return new, self._refresh(build)

    def complete(self, job: Job) -> Transition:
        """Run a retried job to the outcome planned for it."""
        outcome = self.pending.pop(job.id, None)
        if outcome is None:
            raise KeyError(f"job {job.id} has no pending retry outcome")
        job.run_to(outcome.state, outcome.exit_status, outcome.log, self.clock())
        return self._refresh(self.build_of(job))


def as_outcome(
    state: str,
    exit_status: int | None,
    log: bytes | str,
    after: Literal["immediately", "on_demand"],
) -> RetryOutcome:
    return RetryOutcome(state, exit_status, _as_bytes(log), after)
