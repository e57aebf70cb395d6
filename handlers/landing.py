"""Approved bump PRs → label for full CI → land when green.

Four things move a landing along: an approving review, a new head on the PR
(voids the approval), a commit status or a finished Buildkite build of the
head (may make it mergeable, or need a retry), and the merge itself (starts
the pin's cooldown). Each handler only filters and calls ``bot.landing``.
"""

from __future__ import annotations

import logging
from typing import Any

from gidgethub import routing, sansio

from bot import bump, bump_text, landing
from bot.changes import Repo
from bot.landing import Approval, LandingContext
from bot.landing_rules import LANDING_KIND
from bot.payload import field
from bot.retry_flow import FoundBuild
from bot.services import Services
from handlers.allowlist import repository_of

log = logging.getLogger(__name__)
router = routing.Router()

APPROVED = "approved"
CHANGES_REQUESTED = "changes_requested"
SUCCESS = "success"


async def _context(services: Services, repo: Repo) -> LandingContext | None:
    """Everything the landing flow needs, or None when the repo does not land bumps."""
    gh = await services.github.repo_client(repo.full_name)
    config = await bump.load_config(gh, services.store, services.blocking, repo)
    if config is None or config.landing is None:
        return None
    return LandingContext(
        gh,
        services.store,
        services.locks,
        services.blocking,
        repo,
        config,
        config.landing,
        services.settings.bot_login,
        services.buildkite,
        services.cache,
        services.clock,
    )


def _bump_pull(event: sansio.Event, services: Services) -> tuple[Repo, dict[str, Any]] | None:
    repo = services.served(field(event.data, "repository.full_name"))
    pull = event.data.get("pull_request")
    if repo is None or not isinstance(pull, dict):
        return None
    if not landing.is_bot_bump(pull, services.settings.bot_login):
        return None
    return repo, pull


@router.register("pull_request_review", action="submitted")
async def on_review(event: sansio.Event, services: Services) -> None:
    found = _bump_pull(event, services)
    state = field(event.data, "review.state").lower()
    if found is None or state not in (APPROVED, CHANGES_REQUESTED):
        return
    repo, pull = found
    ctx = await _context(services, repo)
    if ctx is None:
        return
    if state == CHANGES_REQUESTED:
        number, login = int(pull["number"]), field(event.data, "review.user.login")
        outcome = await landing.on_changes_requested(ctx, number, login)
        log.info("%s#%d: %s", repo.full_name, number, outcome)
        return
    commit_id = event.data["review"].get("commit_id")
    approval = Approval(
        number=int(pull["number"]),
        review_id=field(event.data, "review.id", int),
        login=field(event.data, "review.user.login"),
        commit_id=commit_id if isinstance(commit_id, str) else None,
    )
    outcome = await landing.on_approval(ctx, approval)
    log.info("%s#%d: approval: %s", repo.full_name, approval.number, outcome)


@router.register("pull_request", action="synchronize")
async def on_new_head(event: sansio.Event, services: Services) -> None:
    found = _bump_pull(event, services)
    if found is None:
        return
    repo, pull = found
    number = int(pull["number"])
    # Most pushes to a bump branch are the bot's own updates of an unapproved PR:
    # settle those from the store, before reading any config from GitHub.
    if await services.store.get_state(LANDING_KIND, landing.state_key(repo, number)) is None:
        return
    ctx = await _context(services, repo)
    if ctx is None:
        return
    log.info("%s#%d: new head: %s", repo.full_name, number, await landing.on_new_head(ctx, number))


@router.register("pull_request", action="closed")
async def on_closed(event: sansio.Event, services: Services) -> None:
    found = _bump_pull(event, services)
    if found is None or found[1].get("merged") is not True:
        return
    repo, pull = found
    pin = str(pull["head"]["ref"]).removeprefix(bump_text.BRANCH_PREFIX)
    # Whoever merged it (GitHub's auto-merge, the bot, a human), the pin cools down.
    await landing.record_landed(services.store, repo, pin, int(pull["number"]), services.clock())


@router.register("status")
async def on_status(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    if repo is None or event.data.get("state") != SUCCESS:
        return  # only a success can make a head mergeable
    branches = [
        str(branch.get("name"))
        for branch in event.data.get("branches") or []
        if str(branch.get("name") or "").startswith(bump_text.BRANCH_PREFIX)
    ]
    if not branches:
        return
    ctx = await _context(services, repo)
    if ctx is None:
        return
    for branch in branches:
        pull = await landing.open_bump_pull(ctx.gh, repo, branch, ctx.bot_login)
        if pull is not None and pull["head"]["sha"] == event.data.get("sha"):
            number = int(pull["number"])
            log.info(
                "%s#%d: status: %s", repo.full_name, number, await landing.advance(ctx, number)
            )


@router.register("build.finished")
async def on_build_finished(event: sansio.Event, services: Services) -> None:
    branch = field(event.data, "build.branch")
    if services.buildkite is None or not branch.startswith(bump_text.BRANCH_PREFIX):
        return
    repository = repository_of(field(event.data, "pipeline.repository"))
    repo = services.served(repository) if repository is not None else None
    if repo is None:
        return
    ctx = await _context(services, repo)
    if ctx is None or ctx.config.buildkite is None:
        return
    pipeline = field(event.data, "pipeline.slug")
    if pipeline not in ctx.config.buildkite.pipelines:
        return
    pull = await landing.open_bump_pull(ctx.gh, repo, branch, ctx.bot_login)
    if pull is None:
        return
    number = int(pull["number"])
    # The webhook's build has no jobs; the flow needs them, so read the build itself.
    build = await services.buildkite.build(
        ctx.config.buildkite.organization, pipeline, field(event.data, "build.number", int)
    )
    found = FoundBuild(ctx.config.buildkite.organization, pipeline, build)
    outcome = await landing.on_build_finished(ctx, number, found)
    log.info("%s#%d: build #%d: %s", repo.full_name, number, found.number, outcome)
