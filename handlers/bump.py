"""Upstream merged → one bump PR per pin; reconcile ticks heal missed webhooks.

Every trigger is just a reason to look: the handler reads current state and
``bot.bump`` makes only the writes needed, so redeliveries cost no writes. A
push fans out into one internal delivery per served repository, so one
repository's failure never holds up another's bump.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from gidgethub import routing, sansio

from bot import bump, bump_text
from bot.followups import sync_delivery
from bot.payload import field
from bot.repo_config import PinConfig
from bot.services import Services
from bot.sources import RECONCILE_EVENT, SYNC_EVENT

log = logging.getLogger(__name__)
router = routing.Router()

BRANCH_REF = "refs/heads/"
SELECT_ALL: Mapping[str, Any] = {"all": True}
LOG_NOT_SERVED = "%s for %s skipped: not in FOLLOWUP_BOT_REPOSITORIES"


async def _sync(
    services: Services, downstream: str, select: bump.PinSelector, *, refresh: bool = False
) -> None:
    gh = await services.github.repo_client(downstream)
    await bump.sync_repo(
        gh,
        services.store,
        services.locks,
        services.blocking,
        downstream,
        clock=services.clock,
        select=select,
        refresh=refresh,
        bot_login=services.settings.bot_login,
    )


@router.register("push")
async def on_push(event: sansio.Event, services: Services) -> None:
    ref = field(event.data, "ref")
    pushed = field(event.data, "repository.full_name").lower()
    if not ref.startswith(BRANCH_REF) or event.data.get("deleted") is True:
        return
    branch = ref.removeprefix(BRANCH_REF)
    sender = event.data.get("sender")
    login = sender.get("login") if isinstance(sender, Mapping) else None
    for downstream in services.settings.repositories:
        select = _push_selection(services, downstream, pushed, branch, event.data, login)
        if select is not None:
            delivery = sync_delivery(event.delivery_id, downstream, select, services.clock())
            await services.followups.submit(delivery)


def _push_selection(
    services: Services,
    downstream: str,
    pushed: str,
    branch: str,
    data: Mapping[str, Any],
    sender: object,
) -> Mapping[str, Any] | None:
    """Which pins of ``downstream`` a push to ``pushed``@``branch`` may move (None: none)."""
    if downstream.lower() != pushed:
        return {"upstream": pushed, "branch": branch}
    if branch == field(data, "repository.default_branch"):
        return SELECT_ALL
    if branch.startswith(bump_text.BRANCH_PREFIX) and sender != services.settings.bot_login:
        # A human pushed to a bump branch: look now, so the bot steps back at once.
        return {"pin": branch.removeprefix(bump_text.BRANCH_PREFIX)}
    return None


@router.register(SYNC_EVENT)
async def on_sync(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    if repo is None:
        log.info(LOG_NOT_SERVED, "sync", field(event.data, "repository.full_name"))
        return
    await _sync(services, repo.full_name, _selector(field(event.data, "select", dict)))


@router.register(RECONCILE_EVENT)
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    downstream = field(event.data, "repository.full_name")
    repo = services.served(downstream)
    if repo is None:
        log.info(LOG_NOT_SERVED, "reconcile", downstream)
        return
    await _sync(services, repo.full_name, _every_pin, refresh=True)


def _selector(select: Mapping[str, Any]) -> bump.PinSelector:
    if isinstance(select.get("pin"), str):
        name = str(select["pin"])
        return lambda pin: pin.name == name
    if isinstance(select.get("upstream"), str) and isinstance(select.get("branch"), str):
        upstream, branch = str(select["upstream"]).lower(), str(select["branch"])
        return lambda pin: pin.upstream.lower() == upstream and pin.branch == branch
    return _every_pin


def _every_pin(_pin: PinConfig) -> bool:
    return True
