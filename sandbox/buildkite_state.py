"""The Buildkite stand-in's world: the builds tests create, and the rules that move them.

Pure state and rules, no I/O: the server renders it as JSON and turns the
transitions these methods report into webhooks. The records and what their
states mean are ``buildkite_model``; ``JobSpec`` and ``as_outcome`` are how a
test describes a job and what its retry will do.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sandbox.buildkite_model import (
    BUILD_FINISHED_STATES,
    BUILD_STATES,
    JOB_STATES,
    RETRYABLE_STATES,
    Artifact,
    Build,
    Job,
    Pipeline,
    Transition,
    derive_build_state,
)

ALREADY_RETRIED = "This job has already been retried"
NOT_RETRYABLE = "Only failed, timed out or canceled jobs can be retried"
MANUAL_RETRY_FORBIDDEN = "This job can't be retried: the step does not allow manual retries"
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
    # False: the step says `retry: manual: allowed: false`; a retry is refused.
    manual_retry_allowed: bool = True


@dataclass(frozen=True)
class RetryOutcome:
    """What a retried job does once it runs."""

    state: str
    exit_status: int | None
    log: bytes
    after: Literal["immediately", "on_demand"]


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
        env: Mapping[str, str] | None = None,
        source: str = "webhook",
        created_at: float | None = None,
    ) -> Build:
        pipeline = self.pipeline(slug)
        if state is not None and state not in BUILD_STATES:
            raise ValueError(f"unknown build state {state!r}")
        now = self.clock() if created_at is None else created_at
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
            env=dict(env or {}),
            source=source,
        )
        for spec in jobs:
            job = self._new_job(build, spec.step_key, spec.name, now)
            job.soft_failed, job.signal_reason = spec.soft_failed, spec.signal_reason
            if spec.parallel is not None:
                job.parallel_group_index, job.parallel_group_total = spec.parallel
            job.manual_retry_allowed = spec.manual_retry_allowed
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
        if not job.manual_retry_allowed:
            raise RetryRefused(MANUAL_RETRY_FORBIDDEN)
        if job.state not in RETRYABLE_STATES:
            raise RetryRefused(NOT_RETRYABLE)
        build = self.build_of(job)
        new = self._new_job(build, job.step_key, job.name, self.clock())
        new.retries_count = (job.retries_count or 0) + 1
        # A retry stays the same shard of the same step.
        new.parallel_group_index = job.parallel_group_index
        new.parallel_group_total = job.parallel_group_total
        new.retry_type = "manual"
        new.manual_retry_allowed = job.manual_retry_allowed
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
