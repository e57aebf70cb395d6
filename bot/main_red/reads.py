"""What judging main reads from Buildkite: the finished main builds (one listing per
finished build, shared by every step), and the log tails of the few red runs a verdict
needs (each read once: a finished job's log never changes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.buildkite.errors import BuildkiteError
from bot.config.main_red import DEFAULT_MAIN_HISTORY_BUILDS
from bot.context.scope import RepoScope
from bot.failures.classify import (
    DEFAULT_INFRA_PATTERNS,
    Failure,
    FailureClass,
    FlakyRule,
    LogPattern,
    classify,
)
from bot.failures.signature import signature_from_lines
from bot.images.logs import job_log_lines
from bot.main_red.signals import RunEvidence, StepRun

FINISHED = ("passed", "failed")
# Verdicts that say the run tells nothing about the code: not a signal of breakage.
_NOT_THE_CODE = frozenset({FailureClass.INFRA, FailureClass.KNOWN_FLAKY})


def history_builds(ctx: RepoScope) -> int:
    """How many finished main builds a judgement reads (config, else the default)."""
    config = ctx.config.main_red
    return config.history_builds if config is not None else DEFAULT_MAIN_HISTORY_BUILDS


async def main_builds(
    ctx: RepoScope, org: str, pipeline: str, branch: str, *, newest: int, finished_at: str = ""
) -> list[dict[str, Any]]:
    """The finished builds of ``branch``, newest first: one listing per finished build.

    A redelivery of the same ``build.finished`` reuses the listing; an old build that
    finished again (one of its jobs was retried) has another ``finished_at`` and is read
    anew, so the retried job's outcome is seen.
    """
    key = ("main-red-builds", org, pipeline, branch)
    found = ctx.cache.get(key)
    if found is not None and _fresh(found[1], newest, finished_at):
        return list(found[1])
    count = history_builds(ctx)
    listed = await ctx.buildkite.builds(
        org,
        pipeline,
        branch=branch,
        states=FINISHED,
        per_page=max(1, min(count, 100)),
        include_retried_jobs=True,
    )
    ctx.cache[key] = (newest, listed)
    return list(listed)


def _fresh(listed: Sequence[Mapping[str, Any]], number: int, finished_at: str) -> bool:
    """Whether a listing already shows build ``number`` as it finished (0: any listing)."""
    if number == 0:
        return True
    build = next((b for b in listed if b.get("number") == number), None)
    return build is not None and (not finished_at or build.get("finished_at") == finished_at)


async def log_lines(ctx: RepoScope, org: str, pipeline: str, run: StepRun) -> list[str] | None:
    """The cleaned tail of a run's first failed attempt; None when it cannot be read."""
    try:
        return await job_log_lines(ctx, org, pipeline, run.build_number, run.job_id)
    except BuildkiteError:
        # Refused (a log deleted or never kept): no verdict on this run. A 5xx or a
        # lost connection is transient instead, and the delivery is tried again.
        return None


def judge_run(
    ctx: RepoScope, run: StepRun, step_key: str, lines: list[str]
) -> tuple[RunEvidence, FailureClass]:
    """The run's signature, and whether the classifier calls it infra or known flaky
    (the repository's own rules and patterns count, as in retry-flaky)."""
    retry = ctx.config.retry
    failure = Failure(
        job_id=run.job_id,
        step_key=step_key,
        name=step_key,
        state=run.state,
        exit_status=run.exit_status,
        signal_reason=run.signal_reason,
        web_url=run.job_url,
        log_tail=None,
    )
    verdict = classify(
        failure,
        history=(),
        rules=[FlakyRule(r.name, r.log, r.step, r.label) for r in retry.flaky_rules],
        infra=[*DEFAULT_INFRA_PATTERNS, *(LogPattern(r.name, r.log) for r in retry.infra_patterns)],
        lines=lines,
    )
    infra = verdict.evidence if verdict.failure_class in _NOT_THE_CODE else None
    return RunEvidence(signature_from_lines(lines), infra), verdict.failure_class


async def evidence_of(
    ctx: RepoScope, org: str, pipeline: str, step_key: str, runs: Sequence[StepRun]
) -> tuple[dict[str, RunEvidence], dict[str, FailureClass]]:
    """Evidence for each run whose log could be read (a missing one leaves the verdict
    open: ``judge`` says so)."""
    evidence: dict[str, RunEvidence] = {}
    classes: dict[str, FailureClass] = {}
    for run in runs:
        lines = await log_lines(ctx, org, pipeline, run)
        if lines is None:
            continue
        evidence[run.job_id], classes[run.job_id] = judge_run(ctx, run, step_key, lines)
    return evidence, classes


def signatures_of(evidence: Mapping[str, RunEvidence]) -> dict[str, str]:
    return {job: found.signature.describe() for job, found in evidence.items()}
