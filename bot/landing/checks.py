"""Whether an approved head is green: commit statuses, check runs, and the Buildkite
builds of the head (blocked ones included)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.buildkite import job_states
from bot.buildkite.client import BuildkiteClient
from bot.config.models import BuildkiteConfig
from bot.context.scope import RepoScope
from bot.failures.builds import FoundBuild
from bot.github import effects
from bot.github.bot_branches import PROPOSAL_PREFIXES
from bot.landing import text as landing_text
from bot.landing.rules import (
    check_runs_not_green,
)
from bot.landing.state import BLOCKED, PASSED, SUCCESS


async def not_green(ctx: RepoScope, head: str, builds: Sequence[FoundBuild]) -> str | None:
    """Why ``head`` is not ready to merge yet, or None when it is."""
    status = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/commits/{ref}/status", url_vars=ctx.repo.vars(ref=head)
    )
    # With no statuses at all GitHub says "pending"; there is nothing to wait for then.
    if int(status.get("total_count") or 0) > 0 and status.get("state") != SUCCESS:
        return f"combined status of {head[:7]} is {status.get('state')}"
    checks = await _check_runs_not_green(ctx, head)
    if checks is not None:
        return checks
    if ctx.config.buildkite is None or ctx.bk is None:
        return None
    if not builds:
        return f"no Buildkite build of {head[:7]} yet"
    for found in builds:
        policy = ctx.landing.blocked_builds
        if found.build.get("state") != PASSED and not blocked_build_is_green(found.build, policy):
            return f"Buildkite {found.pipeline} #{found.number} is {found.build.get('state')}"
    return None


async def _check_runs_not_green(ctx: RepoScope, head: str) -> str | None:
    """Why the check runs on ``head`` (GitHub Actions, other Apps) keep it from merging."""
    runs = [
        run
        async for run in ctx.gh.getiter(
            "/repos/{owner}/{repo}/commits/{ref}/check-runs{?per_page}",
            url_vars=ctx.repo.vars(ref=head, per_page="100"),
            iterable_key="check_runs",
        )
    ]
    return check_runs_not_green(runs, ctx.landing.required_checks)


def is_blocked(build: Mapping[str, Any]) -> bool:
    """A build stopped at a block step (Buildkite's ``blocked`` state or flag)."""
    return build.get("state") == BLOCKED or build.get("blocked") is True


def blocked_build_is_green(build: Mapping[str, Any], policy: str) -> bool:
    """A blocked build counts as green (config ``blocked_builds: green``) when every job
    that ran passed: what is blocked is optional work nobody asked for."""
    if policy != "green" or not is_blocked(build):
        return False
    return not any(job_states.is_hard_failure(job) for job in build.get("jobs") or [])


def blocked_steps(build: Mapping[str, Any]) -> list[str]:
    """The names of the steps a blocked build has not run (blocked, or waiting behind one)."""
    return [
        str(job.get("label") or job.get("name") or job.get("step_key") or job.get("id"))
        for job in build.get("jobs") or []
        if job_states.not_finished(job)
    ]


async def note_blocked_steps(
    ctx: RepoScope, number: int, head: str, builds: Sequence[FoundBuild]
) -> None:
    """Before landing on a blocked build, say once which build it was judged on and which
    steps it leaves unrun."""
    blocked = [found for found in builds if is_blocked(found.build)]
    if not blocked:
        return
    rows = [
        landing_text.BLOCKED_ROW.format(
            build=build_link(found), steps=landing_text.code(blocked_steps(found.build))
        )
        for found in blocked
    ]
    body = landing_text.LANDING_BLOCKED.format(
        head7=head[:7], judged=judged_on(ctx, builds), rows="\n".join(rows)
    )
    marker = landing_text.MARKER_BLOCKED.format(head=head)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)


def build_link(found: FoundBuild) -> str:
    return landing_text.BUILD_LINK.format(
        pipeline=found.pipeline, number=found.number, url=str(found.build.get("web_url") or "")
    )


def judged_on(ctx: RepoScope, builds: Sequence[FoundBuild]) -> str:
    """The builds a landing was judged on, as the comments name them."""
    links = ", ".join(build_link(found) for found in builds)
    labels = ctx.landing.labels_on_approval
    if not labels:
        return links
    return landing_text.JUDGED_AFTER_LABELS.format(builds=links, labels=landing_text.code(labels))


async def pr_builds_of_head(
    bk: BuildkiteClient, where: BuildkiteConfig, number: int, head: str
) -> dict[str, list[FoundBuild]]:
    """In each pipeline, the Buildkite builds of ``head`` for this PR (or its branch), newest
    first: landing judges the head on the newest one that ran the full CI."""
    org = where.organization
    found: dict[str, list[FoundBuild]] = {}
    for pipeline in where.pipelines:
        found[pipeline] = [
            FoundBuild(org, pipeline, build)
            for build in await bk.builds(org, pipeline, commit=head, per_page=10)
            if is_of_pull(build, number)
        ]
    return found


def is_of_pull(build: Mapping[str, Any], number: int) -> bool:
    """A build for this PR: Buildkite says so, or it ran on one of the bot's branches."""
    pull_request = build.get("pull_request") or {}
    return str(pull_request.get("id")) == str(number) or str(build.get("branch") or "").startswith(
        PROPOSAL_PREFIXES
    )
