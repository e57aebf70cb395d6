"""Approved bump PRs → label for full CI → land when green.

Four things move a landing along: an approving review, a new head on the PR
(voids the approval), a commit status, a check run or a finished Buildkite build of the
head (may make it mergeable, or need a retry), and the merge itself (starts
the pin's cooldown). A reconcile tick looks again at landings waiting for the full CI.
Each handler only filters and calls into ``bot.landing``. A landing's comments and
state have one writer at a time across replicas: what a status, a check run, a finished
build or a tick brings (each of its own subject) is handed to a follow-up delivery under
the PR's subject (``bot.context.followups``), the one its reviews and pushes run under.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gidgethub import routing, sansio

from bot.buildkite.pipelines import repository_of
from bot.context.followups import LANDING_EVENT, pr_delivery
from bot.context.handler_ids import handler_id
from bot.context.scope import RepoScope, repo_scope
from bot.context.services import Services
from bot.core.payload import Payload, each, field, optional, user_login
from bot.core.sources import BUILD_FINISHED, RECONCILE_EVENT
from bot.github.bot_branches import PROPOSAL_PREFIXES, proposal_key
from bot.github.changes import Repo
from bot.landing import approval as approving
from bot.landing import flow as landing
from bot.landing import state as landing_state
from bot.landing import tick, withdraw
from bot.landing.rules import CHECK_CONCLUSIONS_OK
from bot.landing.state import Approval
from bot.store.kinds import Kind

log = logging.getLogger(__name__)
router = routing.Router()

APPROVED = "approved"
CHANGES_REQUESTED = "changes_requested"
SUCCESS = "success"


async def _context(services: Services, repo: Repo) -> RepoScope | None:
    """The repository's scope, or None when it does not land bumps."""
    scope = await repo_scope(services, repo)
    return scope if scope is not None and scope.config.landing is not None else None


@dataclass(frozen=True)
class BumpPull:
    """The PR a ``pull_request`` or ``pull_request_review`` payload is about, when it is a
    bump the bot opened."""

    repo: Repo
    number: int
    pin: str
    merged: bool


def _bump_pull(data: Payload, services: Services) -> BumpPull | None:
    full_name = field(data, "repository.full_name")
    pull = field(data, "pull_request", dict)
    number = field(data, "pull_request.number", int)
    head_ref = field(data, "pull_request.head.ref")
    user_login(data, "pull_request.user")  # checked: is_bot_bump reads it
    merged = optional(data, "pull_request.merged", bool) is True
    repo = services.served(full_name)
    if repo is None or not landing_state.is_bot_bump(pull, services.settings.bot_login):
        return None
    return BumpPull(repo, number, proposal_key(head_ref) or "", merged)


@router.register("pull_request_review", action="submitted")
@handler_id("landing.review")
async def on_review(event: sansio.Event, services: Services) -> None:
    found = _bump_pull(event.data, services)
    state = field(event.data, "review.state").lower()
    review_id = field(event.data, "review.id", int)
    reviewer = user_login(event.data, "review.user")
    commit_id = optional(event.data, "review.commit_id")
    if found is None or reviewer is None or state not in (APPROVED, CHANGES_REQUESTED):
        return  # not a bump, a deleted account's review, or only a comment
    ctx = await _context(services, found.repo)
    if ctx is None:
        return
    if state == CHANGES_REQUESTED:
        outcome = await withdraw.on_changes_requested(ctx, found.number, reviewer)
        log.info("%s#%d: %s", found.repo.full_name, found.number, outcome)
        return
    approval = Approval(
        number=found.number, review_id=review_id, login=reviewer, commit_id=commit_id
    )
    outcome = await approving.on_approval(ctx, approval)
    log.info("%s#%d: approval: %s", found.repo.full_name, approval.number, outcome)


@router.register("pull_request_review", action="dismissed")
@handler_id("landing.review-dismissed")
async def on_review_dismissed(event: sansio.Event, services: Services) -> None:
    found = _bump_pull(event.data, services)
    review_id = field(event.data, "review.id", int)
    by = user_login(event.data, "sender")
    if found is None:
        return
    ctx = await _context(services, found.repo)
    if ctx is None:
        return
    outcome = await withdraw.on_dismissed(ctx, found.number, review_id, by or "ghost")
    log.info("%s#%d: dismissal: %s", found.repo.full_name, found.number, outcome)


@router.register("pull_request", action="synchronize")
@handler_id("landing.new-head")
async def on_new_head(event: sansio.Event, services: Services) -> None:
    found = _bump_pull(event.data, services)
    if found is None:
        return
    repo, number = found.repo, found.number
    # Most pushes to a bump branch are the bot's own updates of an unapproved PR:
    # settle those from the store, before reading any config from GitHub.
    if await services.store.get_state(Kind.LANDING, landing_state.state_key(repo, number)) is None:
        return
    ctx = await _context(services, repo)
    if ctx is None:
        return
    log.info("%s#%d: new head: %s", repo.full_name, number, await withdraw.on_new_head(ctx, number))


@router.register("pull_request", action="closed")
@handler_id("landing.closed")
async def on_closed(event: sansio.Event, services: Services) -> None:
    found = _bump_pull(event.data, services)
    if found is None or not found.merged:
        return
    # Whoever merged it (GitHub's auto-merge, the bot, a human), the pin cools down.
    await landing_state.record_landed(
        services.store, found.repo, found.pin, found.number, services.clock()
    )


@router.register("status")
@handler_id("landing.status")
async def on_status(event: sansio.Event, services: Services) -> None:
    full_name = field(event.data, "repository.full_name")
    state = field(event.data, "state")
    sha = field(event.data, "sha")
    names = each(event.data, "branches", "name")
    if state != SUCCESS:
        return  # only a success can make a head mergeable
    await _advance_heads(services, event.delivery_id, full_name, names, sha, "status")


@router.register("check_run", action="completed")
@handler_id("landing.check-run")
async def on_check_run(event: sansio.Event, services: Services) -> None:
    full_name = field(event.data, "repository.full_name")
    conclusion = optional(event.data, "check_run.conclusion")
    sha = field(event.data, "check_run.head_sha")
    branch = optional(event.data, "check_run.check_suite.head_branch")
    if conclusion not in CHECK_CONCLUSIONS_OK or branch is None:
        return  # a failed check only keeps the head waiting; nothing to do now
    await _advance_heads(services, event.delivery_id, full_name, [branch], sha, "check run")


async def _advance_heads(
    services: Services,
    delivery_id: str,
    full_name: str,
    branches: Sequence[str],
    sha: str,
    what: str,
) -> None:
    """A check of ``sha`` passed: advance the open bump PRs whose head it is."""
    repo = services.served(full_name)
    bumps = [name for name in branches if name.startswith(PROPOSAL_PREFIXES)]
    if repo is None or not bumps:
        return
    ctx = await _context(services, repo)
    if ctx is None:
        return
    for branch in bumps:
        pull = await landing_state.open_bump_pull(ctx.gh, repo, branch, ctx.bot_login)
        if pull is not None and pull["head"]["sha"] == sha:
            await _hand_over(services, delivery_id, repo, int(pull["number"]), {"why": what})


async def _hand_over(
    services: Services, delivery_id: str, repo: Repo, number: int, extra: Mapping[str, Any]
) -> None:
    """The landing of PR ``number`` moved along under the PR's subject (see above); one
    follow-up per parent delivery and PR, so a rerun of the parent adds none."""
    follow_up = pr_delivery(
        f"{delivery_id}/landing/{repo.full_name.lower()}#{number}",
        LANDING_EVENT,
        repo.full_name,
        number,
        services.clock(),
        extra,
    )
    await services.followups.submit(follow_up)


@router.register(BUILD_FINISHED)
@handler_id("landing.build-finished")
async def on_build_finished(event: sansio.Event, services: Services) -> None:
    branch = field(event.data, "build.branch")
    build_number = field(event.data, "build.number", int)
    pipeline = field(event.data, "pipeline.slug")
    repository = repository_of(field(event.data, "pipeline.repository"))
    if services.buildkite is None or not branch.startswith(PROPOSAL_PREFIXES):
        return
    repo = services.served(repository) if repository is not None else None
    if repo is None:
        return
    # A build event says nothing of main's head: the config read at it lately will do.
    ctx = await repo_scope(services, repo, recent=True)
    if (
        ctx is None
        or ctx.config.landing is None
        or ctx.config.buildkite is None
        or pipeline not in ctx.config.buildkite.pipelines
    ):
        return
    pull = await landing_state.open_bump_pull(ctx.gh, repo, branch, ctx.bot_login)
    if pull is not None:
        built = {"why": f"build #{build_number}", "pipeline": pipeline, "build": build_number}
        await _hand_over(services, event.delivery_id, repo, int(pull["number"]), built)


@router.register(RECONCILE_EVENT)
@handler_id("landing.reconcile")
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    if repo is None:
        return
    # Most ticks find no landing waiting: settled from the store, with no config read.
    for number in await tick.waiting(services.store, repo):
        await _hand_over(services, event.delivery_id, repo, number, {"why": "reconcile"})


@router.register(LANDING_EVENT)
@handler_id("landing.follow-up")
async def on_follow_up(event: sansio.Event, services: Services) -> None:
    """What ``_hand_over`` handed over, under the PR's subject: a finished build of the
    PR acted on, or the landing advanced."""
    repo = services.served(field(event.data, "repository.full_name"))
    number = field(event.data, "pull_request.number", int)
    why = field(event.data, "why")
    pipeline = optional(event.data, "pipeline")
    build_number = optional(event.data, "build", int)
    if repo is None:
        return
    if await services.store.get_state(Kind.LANDING, landing_state.state_key(repo, number)) is None:
        return  # never approved: settled from the store, before any config read
    ctx = await _context(services, repo)
    if ctx is None:
        return
    if pipeline is not None and build_number is not None:
        outcome = await landing.on_bump_build(ctx, number, pipeline, build_number)
    else:
        outcome = await landing.advance(ctx, number)
    log.info("%s#%d: %s: %s", repo.full_name, number, why, outcome)
