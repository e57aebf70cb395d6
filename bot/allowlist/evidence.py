"""Audit evidence: what one audit said (``AuditRun``) and where it comes from, a
finished Buildkite build's audit job (its log) or the bot's own audit of a wheel.

Log evidence cannot tell a pattern that matched only stable libraries from
one that matched stable *and* unstable ones (both are reported stale); an
audit of the wheel itself (``bot.abi.judge``) knows the difference up front,
so its evidence also says which patterns to narrow, and to what.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bot.abi.judge import AuditResult, render_table
from bot.abi.log import PASSED, AuditEvidence, parse_audit_log
from bot.buildkite.client import BuildkiteClient

log = logging.getLogger(__name__)

FINISHED_JOB_STATES = frozenset({"passed", "failed", "timed_out", "canceled", "broken"})


@dataclass(frozen=True)
class AuditRun:
    """One audit: what it said and where (a Buildkite job, or the bot's own wheel audit)."""

    commit: str
    branch: str
    key: str  # idempotency key of this evidence (the job id, or "wheel:<commit>")
    url: str | None  # link to the job, when there is one
    evidence: AuditEvidence
    # From a wheel audit only: pattern → narrower patterns (the audit knew the libraries),
    # and the per-pattern table as evidence.
    narrow: Mapping[str, Sequence[str]] = field(default_factory=dict)
    table: str | None = None


def run_from_wheel(result: AuditResult, commit: str, branch: str) -> AuditRun:
    """The bot's own audit of a wheel, as evidence: stale = delete or narrow decisions."""
    stale = tuple(p.pattern for p in result.patterns if p.decision in ("delete", "narrow"))
    evidence = AuditEvidence(
        passed=result.exit_code == 0,
        outside=tuple(lib.path for lib in result.unexpected),
        stale=stale,
        inspection_error=None,
        lines=result.check_lines or (PASSED,),
    )
    narrow = {p.pattern: list(p.replacement) for p in result.patterns if p.decision == "narrow"}
    return AuditRun(commit, branch, f"wheel:{commit}", None, evidence, narrow, render_table(result))


async def audit_run_from_build(
    bk: BuildkiteClient,
    org: str,
    pipeline: str,
    number: int,
    *,
    step_key: str,
    variable: str,
) -> AuditRun | None:
    """The audit job of a finished build and what its log says; None without a verdict."""
    build = await bk.build(org, pipeline, number)
    jobs = [
        job
        for job in build.get("jobs") or []
        if job.get("step_key") == step_key and job.get("state") in FINISHED_JOB_STATES
    ]
    if not jobs:
        return None
    job = jobs[-1]  # the build lists the latest attempt of each step
    raw = await bk.job_log_tail(org, pipeline, number, str(job["id"]))
    evidence = parse_audit_log(raw, variable=variable)
    if not evidence.found:
        log.info("audit job %s has no verdict in its log tail", job.get("web_url"))
        return None
    return AuditRun(
        commit=str(build["commit"]),
        branch=str(build["branch"]),
        key=str(job["id"]),
        url=job.get("web_url"),
        evidence=evidence,
    )
