"""Which Buildkite builds a landing is judged on: the full CI of the approved head.

vLLM runs a reduced pipeline on a PR until it carries ``ready``; the label starts the
full one, whose GPU suites a build from before never ran (they wait behind block steps).
So with ``landing.labels_on_approval``, a build counts for landing only if it was created
once those labels were all on the PR, their time read from the PR's timeline (the
``labeled`` events). Landing waits for such a build in every configured pipeline; with
``landing.start_full_build`` it creates one itself where none came (once per head, found
again by the marker in its env before it is created again); and once
``landing.full_build_minutes`` pass without one, it says so, once per head.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.buildkite.client import BuildkiteClient, PullRequestRef
from bot.config.models import BuildkiteConfig
from bot.context.scope import RepoScope
from bot.core.errors import TransientError
from bot.failures.builds import FoundBuild
from bot.github import effects
from bot.landing import text as landing_text
from bot.landing.checks import build_link, pr_builds_of_head
from bot.landing.rules import counts_for_landing, full_build_overdue, labels_on_since
from bot.landing.state import Landing, LandingOutcome, LandingState, save_state

# The env a build the bot starts carries: found by it after a lost answer or a crash.
ENV_MARKER = "FOLLOWUP_BOT_LANDING"


async def judged_builds(
    ctx: RepoScope, number: int, pull: Mapping[str, Any], state: LandingState
) -> list[FoundBuild] | Landing:
    """The build of each configured pipeline that landing judges the head on (in the
    config's order), or why it waits for them."""
    where, bk = _buildkite(ctx)
    head = str(pull["head"]["sha"])
    labels = ctx.landing.labels_on_approval
    off = labels_off(pull, labels)
    if off:
        return Landing(LandingOutcome.WAITING, landing_text.LABELS_NOT_ON.format(labels=off))
    since = await labels_since(ctx, number, labels, state)
    listed = await pr_builds_of_head(bk, where, number, head)
    judged = {p: found[0] for p, found in listed.items() if _counts(found, since)}
    missing = [pipeline for pipeline in where.pipelines if pipeline not in judged]
    if missing and ctx.landing.start_full_build:
        for pipeline in missing:
            started = await _start_once(ctx, number, pull, state, pipeline, listed[pipeline])
            if started is not None and counts_for_landing(started.build, since):
                judged[pipeline] = started
        missing = [pipeline for pipeline in missing if pipeline not in judged]
    if missing:
        return await _wait(ctx, number, state, head, since, {p: listed[p] for p in missing})
    if state.awaiting_full_build is not None:
        state.awaiting_full_build = None
        await save_state(ctx, number, state)
    return [judged[pipeline] for pipeline in where.pipelines]


async def counts(
    ctx: RepoScope,
    number: int,
    pull: Mapping[str, Any],
    state: LandingState,
    found: FoundBuild,
) -> bool:
    """Whether this one build of the head ran the full CI (see the module's words)."""
    labels = ctx.landing.labels_on_approval
    if labels_off(pull, labels):
        return False
    return counts_for_landing(found.build, await labels_since(ctx, number, labels, state))


def labels_off(pull: Mapping[str, Any], labels: Sequence[str]) -> str:
    """The labels on approval that are not on the PR now (someone took one off), as code."""
    have = {str(label.get("name")).casefold() for label in pull.get("labels") or []}
    return landing_text.code(label for label in labels if label.casefold() not in have)


async def labels_since(
    ctx: RepoScope, number: int, labels: Sequence[str], state: LandingState
) -> float | None:
    """When the labels on approval were all on the PR, by its timeline, or just before the
    bot put them on when that is later (the timeline's whole seconds cannot tell a build
    created earlier within the label's second); None: no labels."""
    if not labels:
        return None
    events = [
        event
        async for event in ctx.gh.getiter(
            "/repos/{owner}/{repo}/issues/{number}/timeline{?per_page}",
            url_vars=ctx.repo.vars(number=str(number), per_page="100"),
        )
    ]
    since = labels_on_since(events, labels)
    if since is None:
        # On the PR (checked first) but not yet in the timeline GitHub lists: a moment's
        # lag. The inbox runs this delivery again with its backoff.
        names = landing_text.code(labels)
        raise TransientError(
            landing_text.LABELS_NOT_IN_TIMELINE.format(labels=names, number=number)
        )
    return max(since, state.labels_added_at or since)


def _counts(found: Sequence[FoundBuild], since: float | None) -> bool:
    """The newest build of a pipeline ran the full CI (an older one cannot have, if not)."""
    return bool(found) and counts_for_landing(found[0].build, since)


def _buildkite(ctx: RepoScope) -> tuple[BuildkiteConfig, BuildkiteClient]:
    # Landing asks only when the repository configures Buildkite and the bot has a token.
    assert ctx.config.buildkite is not None
    assert ctx.bk is not None
    return ctx.config.buildkite, ctx.bk


async def _wait(
    ctx: RepoScope,
    number: int,
    state: LandingState,
    head: str,
    since: float | None,
    earlier: Mapping[str, Sequence[FoundBuild]],
) -> Landing:
    """No full build yet in the ``earlier`` pipelines: wait (a reconcile tick looks again),
    and once the time is up say so, once per head."""
    if state.awaiting_full_build != head:
        state.awaiting_full_build = head
        await save_state(ctx, number, state)
    pipelines = landing_text.code(earlier.keys())
    labels = landing_text.code(ctx.landing.labels_on_approval)
    if since is None:
        return Landing(LandingOutcome.WAITING, f"no Buildkite build of {head[:7]} yet")
    minutes = ctx.landing.full_build_minutes
    if full_build_overdue(since, ctx.clock(), minutes):
        older = [build_link(found[0]) for found in earlier.values() if found]
        body = landing_text.NO_FULL_BUILD.format(
            head7=head[:7],
            minutes=minutes,
            labels=labels,
            pipelines=pipelines,
            earlier=", ".join(older) or landing_text.NO_EARLIER_BUILD,
        )
        marker = landing_text.MARKER_NO_FULL_BUILD.format(head=head)
        await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    why = landing_text.WAITING_FOR_FULL_BUILD.format(
        head7=head[:7], pipelines=pipelines, labels=labels
    )
    return Landing(LandingOutcome.WAITING_FULL_CI, why)


def marker_value(ctx: RepoScope, number: int, head: str) -> str:
    return f"{ctx.repo.full_name}#{number}@{head}"


async def _start_once(
    ctx: RepoScope,
    number: int,
    pull: Mapping[str, Any],
    state: LandingState,
    pipeline: str,
    listed: Sequence[FoundBuild],
) -> FoundBuild | None:
    """Create a full build of the head in ``pipeline``, once per head: None when the bot
    started one before (it no longer counts: it is not started again)."""
    where, bk = _buildkite(ctx)
    head = str(pull["head"]["sha"])
    key = f"{pipeline}@{head}"
    if key in state.started_builds:
        return None
    value = marker_value(ctx, number, head)
    # Made before and not recorded (a crash after the create, a lost answer): found by its
    # env, never created twice.
    ours = next((found for found in listed if _marked(found.build, value)), None)
    if ours is None:

        async def create() -> dict[str, Any]:
            return await bk.create_build(
                where.organization,
                pipeline,
                commit=head,
                branch=str(pull["head"]["ref"]),
                message=landing_text.FULL_BUILD_MESSAGE.format(number=number, head7=head[:7]),
                env={ENV_MARKER: value},
                pull_request=PullRequestRef(number, str(pull["base"]["ref"])),
            )

        async def find() -> dict[str, Any] | None:
            builds = await bk.builds(where.organization, pipeline, commit=head, per_page=10)
            return next((build for build in builds if _marked(build, value)), None)

        ours = FoundBuild(
            where.organization, pipeline, await effects.look_after_failure(create, find)
        )
    state.started_builds[key] = ours.number
    await save_state(ctx, number, state)
    return ours


def _marked(build: Mapping[str, Any], value: str) -> bool:
    env = build.get("env")
    return isinstance(env, Mapping) and env.get(ENV_MARKER) == value
