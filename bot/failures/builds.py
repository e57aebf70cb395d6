"""A PR's builds and their failed jobs: in each configured pipeline, the newest build of
the PR's head (`pr_builds`, each a `FoundBuild`), the jobs of a build that failed
for real (`hard_failures`) and those someone canceled while they ran (`canceled_jobs`).
Shared by retry-flaky and landing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.buildkite import job_states
from bot.context.scope import RepoScope


@dataclass(frozen=True)
class FoundBuild:
    org: str
    pipeline: str
    build: dict[str, Any]

    @property
    def number(self) -> int:
        return int(self.build["number"])

    @property
    def key(self) -> str:
        return f"{self.org}/{self.pipeline}/{self.number}"


def hard_failures(build: dict[str, Any]) -> list[dict[str, Any]]:
    """Jobs that failed for real: not soft-failed, not already retried, scripts only.

    A job that never ran (broken, skipped, canceled before it started) is not one: it is
    not listed, not counted against ``max_failed_jobs`` and not retried, since a retry
    would not run its step either. ``expired`` still is (no agent took it: infra). A job
    canceled while it ran is not one either: see ``canceled_jobs``."""
    return [job for job in build.get("jobs") or [] if job_states.is_failure(job)]


def canceled_jobs(build: dict[str, Any]) -> list[dict[str, Any]]:
    """Jobs someone canceled while they ran: listed as canceled, apart from the failures,
    never counted against ``max_failed_jobs`` and never retried (see
    ``bot.buildkite.job_states``)."""
    return [job for job in build.get("jobs") or [] if job_states.is_canceled_job(job)]


async def pr_builds(ctx: RepoScope, head: str, number: int) -> list[FoundBuild]:
    """In each configured pipeline, the newest build of ``head`` that belongs to this PR."""
    assert ctx.config.buildkite is not None
    org = ctx.config.buildkite.organization
    found = []
    for pipeline in ctx.config.buildkite.pipelines:
        for build in await ctx.buildkite.builds(org, pipeline, commit=head, per_page=10):
            pull_request = build.get("pull_request") or {}
            if str(pull_request.get("id")) == str(number):
                found.append(FoundBuild(org, pipeline, build))
                break
    return found
