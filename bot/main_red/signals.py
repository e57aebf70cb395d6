"""Is a CI step broken on main? Each step's runs across main builds, and a judgement.

A step that fails on main once may be a flake, the machine under it, or a real
breakage; acting on one red build (opening a revert, pinging an author) would
cry wolf. So the runs of each step are laid out across main's finished builds
(a *timeline*, newest first), and a step is called broken only on the evidence
PyTorch's autorevert asks for, adapted: at least two failed runs in a row, none
of them infrastructure, failing the same way (their failure signatures match),
and an older run that passed, so there is a range of commits to blame.

Reading the runs (from Buildkite's REST build JSON, jobs with retried jobs):

- a step is its ``step_key`` and, for a ``parallelism: N`` step, its shard
  (``parallel_group_index``): shard is compared with shard, as retry-flaky does;
- only attempts that ran to their end say anything (``passed``, or ran and
  failed): one that never ran (skipped, broken, canceled before it started,
  expired) is ignored, and so is one canceled while it ran (a person, or a newer
  build, stopped it: no failure of the code, and Buildkite does not fail the build
  for it). A build where no attempt of the step ran to its end has no run of it at
  all, which neither breaks a streak nor starts one: a build whose only jobs not
  passed are canceled ones is no red signal;
- the latest attempt decides whether the run passed; a failure is judged on the
  first attempt that failed (its job, log, exit status and signal reason), the
  one main's code failed before any retry.

The caller reads logs (I/O) for :func:`runs_to_read` and hands their signatures
and infra evidence to :func:`judge`, which is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.buildkite import job_states
from bot.failures.signature import Signature

FINISHED_BUILD_STATES = frozenset({"passed", "failed"})
# Logs the caller reads per step: the newest failed runs. Three is one more than the
# two a broken verdict needs, and bounds the Buildkite requests per red step.
MAX_JUDGED_RUNS = 3

# Reasons (tests match them).
REASON_NO_RUNS = "no main build ran this step"
REASON_GREEN = "passed in main build #{number}"
REASON_GREEN_ON_RETRY = "passed on retry in main build #{number}"
REASON_LOG_NOT_READ = "the log of main build #{number} could not be read: no verdict"
REASON_INFRA = "main build #{number} failed on infrastructure: {infra}"
REASON_NO_SIGNATURE = (
    "no failed test, error line or command output found in the log of main build #{number}"
)
REASON_DIFFERENT = "main builds #{newer} and #{older} failed differently"
REASON_NO_GREEN = (
    "failed in every main build read ({count}): no passing run to compare with "
    "(a new or renamed step, or too short a history)"
)
REASON_RED = "failed once, in main build #{number}: {signature}"
REASON_BROKEN = (
    "failed the same way in {count} main builds in a row since #{first} "
    "(last green #{green}): {signature}"
)


@dataclass(frozen=True)
class StepId:
    """A step of the pipeline; ``shard`` is the 0-based ``parallel_group_index``.

    ``str()`` shows a shard 1-based (``key #2`` for index 1), as Buildkite's ``%N``
    label placeholder numbers the jobs of a parallel step.
    """

    key: str
    shard: int | None = None

    def __str__(self) -> str:
        return self.key if self.shard is None else f"{self.key} #{self.shard + 1}"


@dataclass(frozen=True)
class StepRun:
    """A step's outcome in one main build.

    ``passed`` is its latest attempt's. The job fields are those of the first attempt
    that failed when one did (the failure to judge), else of the latest attempt.
    """

    build_number: int
    build_url: str
    commit: str
    passed: bool
    job_id: str
    job_url: str
    exit_status: int | None
    signal_reason: str | None
    state: str
    passed_on_retry: bool  # an attempt failed, and the latest one passed


class SignalState(StrEnum):
    GREEN = "green"  # the newest run passed
    RED = "red"  # one hard failure: not yet broken
    BROKEN = "broken"  # failed the same way in a row, after a green run
    FLAKY = "flaky"  # red, but on infrastructure or failing differently
    UNKNOWN = "unknown"  # no green run to compare with, or a log not read


@dataclass(frozen=True)
class RunEvidence:
    """What the log of a failed run said: its signature, and the infra evidence line
    when the failure classifier called it infrastructure (``None`` otherwise)."""

    signature: Signature
    infra: str | None = None


@dataclass(frozen=True)
class StepSignal:
    step: StepId
    state: SignalState
    last_green: StepRun | None
    streak: tuple[StepRun, ...]  # the newest consecutive failed runs, newest first
    reason: str


def timelines(builds: Sequence[Mapping[str, Any]]) -> dict[StepId, tuple[StepRun, ...]]:
    """Every step's runs across the finished ``builds``, newest first.

    Builds not finished (state other than passed or failed) or without a number are
    ignored; a build listed twice counts once (the first listing); order is by number.
    """
    by_number: dict[int, Mapping[str, Any]] = {}
    for build in builds:
        number = build.get("number")
        if (
            isinstance(number, int)
            and not isinstance(number, bool)
            and build.get("state") in FINISHED_BUILD_STATES
        ):
            by_number.setdefault(number, build)
    runs: dict[StepId, list[StepRun]] = {}
    for number in sorted(by_number, reverse=True):
        for step, run in _build_runs(number, by_number[number]).items():
            runs.setdefault(step, []).append(run)
    return {step: tuple(found) for step, found in runs.items()}


def _build_runs(number: int, build: Mapping[str, Any]) -> dict[StepId, StepRun]:
    attempts: dict[StepId, list[Mapping[str, Any]]] = {}
    for job in build.get("jobs") or ():
        key = job.get("step_key")
        if not isinstance(key, str) or not key or not job_states.is_script(job):
            continue
        if job.get("state") != job_states.PASSED and not job_states.ran_and_failed(job):
            continue  # never ran, canceled, or not finished: says nothing about the step
        if job.get("soft_failed"):
            continue  # a soft failure does not fail main's build: no hard failure
        shard = job.get("parallel_group_index")
        step = StepId(key, shard if isinstance(shard, int) else None)
        attempts.setdefault(step, []).append(job)
    return {step: _run(number, build, jobs) for step, jobs in attempts.items()}


def _run(number: int, build: Mapping[str, Any], attempts: list[Mapping[str, Any]]) -> StepRun:
    attempts.sort(key=lambda job: (int(job.get("retries_count") or 0), str(job.get("created_at"))))
    passed = attempts[-1].get("state") == job_states.PASSED
    failed = [job for job in attempts if job_states.ran_and_failed(job)]
    job = failed[0] if failed else attempts[-1]
    exit_status = job.get("exit_status")
    signal_reason = job.get("signal_reason")
    return StepRun(
        build_number=number,
        build_url=str(build.get("web_url") or ""),
        commit=str(build.get("commit") or ""),
        passed=passed,
        job_id=str(job.get("id") or ""),
        job_url=str(job.get("web_url") or ""),
        exit_status=exit_status
        if isinstance(exit_status, int) and not isinstance(exit_status, bool)
        else None,
        signal_reason=signal_reason if isinstance(signal_reason, str) else None,
        state=job_states.state(job),
        passed_on_retry=passed and bool(failed),
    )


def red_streak(runs: Sequence[StepRun]) -> tuple[StepRun, ...]:
    """The newest consecutive failed runs, newest first (empty when the newest passed)."""
    streak: list[StepRun] = []
    for run in runs:
        if run.passed:
            break
        streak.append(run)
    return tuple(streak)


def last_green(runs: Sequence[StepRun]) -> StepRun | None:
    """The newest passed run older than the red streak (the newest run when it passed)."""
    index = len(red_streak(runs))
    return runs[index] if index < len(runs) else None


def last_episode(runs: Sequence[StepRun]) -> tuple[StepRun, ...]:
    """The runs from the newest failed one on, newest first: the step's last red streak
    and the runs before it (all of ``runs`` when the newest failed; empty when none did).
    What `why-red` explains about a step that is green again."""
    index = next((i for i, run in enumerate(runs) if not run.passed), len(runs))
    return tuple(runs[index:])


def runs_to_read(runs: Sequence[StepRun]) -> tuple[StepRun, ...]:
    """The failed runs whose logs :func:`judge` needs: the streak's newest few."""
    return red_streak(runs)[:MAX_JUDGED_RUNS]


def first_red(signal: StepSignal) -> StepRun | None:
    """The oldest run of the streak: the first build main went red in, as far as read."""
    return signal.streak[-1] if signal.streak else None


def judge(step: StepId, runs: Sequence[StepRun], evidence: Mapping[str, RunEvidence]) -> StepSignal:
    """The step's state on main from its runs (newest first) and the judged runs' evidence.

    In this order: no run → unknown; the newest passed → green; a judged run's log not
    read → unknown; a judged run on infrastructure → flaky; for two or more judged runs,
    a log with no signature → unknown, signatures that differ → flaky; no passing run
    older than the streak → unknown; one failed run → red; else broken.
    """
    streak = red_streak(runs)
    green = last_green(runs)

    def signal(state: SignalState, reason: str) -> StepSignal:
        return StepSignal(step, state, green, streak, reason)

    if not runs:
        return signal(SignalState.UNKNOWN, REASON_NO_RUNS)
    if not streak:
        newest = runs[0]
        template = REASON_GREEN_ON_RETRY if newest.passed_on_retry else REASON_GREEN
        return signal(SignalState.GREEN, template.format(number=newest.build_number))
    judged = runs_to_read(runs)
    problem = _doubt(judged, evidence)
    if problem is not None:
        return signal(*problem)
    signature = evidence[judged[0].job_id].signature
    if green is None:
        return signal(SignalState.UNKNOWN, REASON_NO_GREEN.format(count=len(runs)))
    if len(streak) == 1:
        reason = REASON_RED.format(number=streak[0].build_number, signature=signature.describe())
        return signal(SignalState.RED, reason)
    reason = REASON_BROKEN.format(
        count=len(streak),
        first=streak[-1].build_number,
        green=green.build_number,
        signature=signature.describe(),
    )
    return signal(SignalState.BROKEN, reason)


def _doubt(
    judged: Sequence[StepRun], evidence: Mapping[str, RunEvidence]
) -> tuple[SignalState, str] | None:
    """Why the judged runs are not one real failure repeated, if they are not."""
    for run in judged:
        if run.job_id not in evidence:
            return SignalState.UNKNOWN, REASON_LOG_NOT_READ.format(number=run.build_number)
    for run in judged:
        infra = evidence[run.job_id].infra
        if infra is not None:
            return SignalState.FLAKY, REASON_INFRA.format(number=run.build_number, infra=infra)
    if len(judged) == 1:
        return None  # one failure: nothing to compare it with
    for run in judged:
        if evidence[run.job_id].signature.kind == "none":
            return SignalState.UNKNOWN, REASON_NO_SIGNATURE.format(number=run.build_number)
    newest = evidence[judged[0].job_id].signature
    for run in judged[1:]:
        if not newest.matches(evidence[run.job_id].signature):
            reason = REASON_DIFFERENT.format(newer=judged[0].build_number, older=run.build_number)
            return SignalState.FLAKY, reason
    return None


__all__ = [
    "MAX_JUDGED_RUNS",
    "RunEvidence",
    "SignalState",
    "StepId",
    "StepRun",
    "StepSignal",
    "first_red",
    "judge",
    "last_episode",
    "last_green",
    "red_streak",
    "runs_to_read",
    "timelines",
]
