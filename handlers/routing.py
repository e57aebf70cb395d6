"""The "CI routing" check run on each new head of a PR that touches the generator's files,
and the migration PRs, kept on each reconcile tick (approved, they land as bumps do)."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot.context.handler_ids import handler_id
from bot.context.scope import repo_scope
from bot.context.services import Services
from bot.core.payload import field
from bot.core.sources import RECONCILE_EVENT
from bot.routing_check.flow import PullHead, check_pull
from bot.routing_check.migrate import reconcile_migrations

log = logging.getLogger(__name__)
router = routing.Router()


@router.register("pull_request", action="opened")
@router.register("pull_request", action="synchronize")
@router.register("pull_request", action="reopened")
@handler_id("routing.check")
async def on_pull_head(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    pull = PullHead(
        number=field(event.data, "pull_request.number", int),
        head_sha=field(event.data, "pull_request.head.sha"),
        head_ref=field(event.data, "pull_request.head.ref"),
        base_sha=field(event.data, "pull_request.base.sha"),
    )
    if repo is None:
        return
    ctx = await repo_scope(services, repo)
    if ctx is None:
        return
    outcome = await check_pull(ctx, pull, app_id=services.settings.app_id)
    log.info("%s#%d: CI routing check: %s", repo.full_name, pull.number, outcome)


@router.register(RECONCILE_EVENT)
@handler_id("routing.migrations")
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    if repo is None:
        return
    ctx = await repo_scope(services, repo)
    if ctx is None or (ctx.config.routing is None and not ctx.config.migrations):
        return  # no usable config, or nothing asked about routing
    for result in await reconcile_migrations(ctx):
        log.info("%s: migration %s: %s", repo.full_name, result.name, result.outcome)
