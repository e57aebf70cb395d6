"""The dashboard issue, compared with its live body on each reconcile tick and edited only
when it differs (a change, or an edit by hand)."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot.config.models import DEFAULT_HANDLE
from bot.context.config_load import load_config
from bot.context.handler_ids import handler_id
from bot.context.services import Services
from bot.core.payload import field
from bot.core.sources import RECONCILE_EVENT
from bot.dashboard.flow import collect, render, upsert_dashboard
from bot.store.kinds import Kind

log = logging.getLogger(__name__)
router = routing.Router()


@router.register(RECONCILE_EVENT)
@handler_id("dashboard.reconcile")
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    if repo is None:
        return
    gh = await services.github.repo_client(repo.full_name)
    # A broken config is exactly what the dashboard must show, so it renders anyway.
    config = await load_config(gh, services.store, services.blocking, repo, cache=services.cache)
    broken = await services.store.get_state(Kind.CONFIG, repo.full_name)
    if config is None and broken is None:
        return  # no .github/followup-bot.yml: the repository has not opted in
    handle = config.handle if config is not None else DEFAULT_HANDLE
    async with services.locks.hold(f"{repo.full_name}#dashboard"):
        data = await collect(services.store, repo.full_name, config, now=services.clock())
        body = render(data, handle=handle)
        outcome = await upsert_dashboard(
            gh,
            services.store,
            repo,
            body,
            bot_login=services.settings.bot_login,
            adopt=services.settings.adopt_dashboard,
            now=services.clock(),
        )
    log.info("%s: dashboard %s", repo.full_name, outcome)
