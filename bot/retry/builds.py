"""A PR's builds and their failed jobs: in each configured pipeline, the newest build of
the PR's head (`pr_builds`, each a `FoundBuild`), and the jobs of a build that failed
for real (`hard_failures`). Shared by retry-flaky and landing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.buildkite import job_states
from bot.service.scope import RepoScope


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
    would not run its step either. ``expired`` still is (no agent took it: infra), and
    so is a job canceled while it ran (see ``bot.buildkite.job_states``)."""
    return [job for job in build.get("jobs") or [] if job_states.is_hard_failure(job)]


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
