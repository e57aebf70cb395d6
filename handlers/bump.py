"""Upstream merged → one bump PR per pin; reconcile ticks heal missed webhooks.

Every trigger is just a reason to look: the handler reads current state and
``bot.bump`` makes only the writes needed, so redeliveries cost no writes.
"""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot import bump, bump_text
from bot.payload import field
from bot.repo_config import PinConfig
from bot.services import Services
from bot.subjects import RECONCILE_EVENT

log = logging.getLogger(__name__)
router = routing.Router()

BRANCH_REF = "refs/heads/"


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
    )


@router.register("push")
async def on_push(event: sansio.Event, services: Services) -> None:
    ref = field(event.data, "ref")
    pushed = field(event.data, "repository.full_name").lower()
    if not ref.startswith(BRANCH_REF) or event.data.get("deleted") is True:
        return
    branch = ref.removeprefix(BRANCH_REF)
    sender = event.data.get("sender", {}).get("login")
    for downstream in services.settings.repositories:
        if downstream.lower() != pushed:
            await _sync(services, downstream, _following(pushed, branch))
        elif branch == field(event.data, "repository.default_branch"):
            await _sync(services, downstream, _every_pin)
        elif branch.startswith(bump_text.BRANCH_PREFIX) and sender != services.settings.bot_login:
            # A human pushed to a bump branch: look now, so the bot steps back at once.
            await _sync(services, downstream, _named(branch.removeprefix(bump_text.BRANCH_PREFIX)))


@router.register(RECONCILE_EVENT)
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    downstream = field(event.data, "repository.full_name")
    repo = services.served(downstream)
    if repo is None:
        log.info("reconcile for %s skipped: not in FOLLOWUP_BOT_REPOSITORIES", downstream)
        return
    await _sync(services, repo.full_name, _every_pin, refresh=True)


def _every_pin(_pin: PinConfig) -> bool:
    return True


def _following(upstream: str, branch: str) -> bump.PinSelector:
    return lambda pin: pin.upstream.lower() == upstream and pin.branch == branch


def _named(name: str) -> bump.PinSelector:
    return lambda pin: pin.name == name
