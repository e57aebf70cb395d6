"""Upstream merged or tagged a release → one bump PR per pin; reconcile ticks heal
missed webhooks.

Every trigger is just a reason to look: the handler reads current state and
``bot.pins.bump`` makes only the writes needed, so redeliveries cost no writes. A
push fans out into one internal delivery per served repository, so one
repository's failure never holds up another's bump.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as field_
from typing import Any

from gidgethub import routing, sansio

from bot.allowlist.replay import replay_prunes
from bot.config.models import PinConfig
from bot.context.followups import sync_delivery
from bot.context.handler_ids import handler_id
from bot.context.services import Services
from bot.core.payload import field, optional
from bot.core.sources import RECONCILE_EVENT, SYNC_EVENT
from bot.pins import bump
from bot.pins import text as bump_text
from bot.pins.changed import main_push_selection, touches

log = logging.getLogger(__name__)
router = routing.Router()

BRANCH_REF = "refs/heads/"
LOG_NOT_SERVED = "%s for %s skipped: not in FOLLOWUP_BOT_REPOSITORIES"


async def _sync(
    services: Services,
    downstream: str,
    select: bump.PinSelector,
    *,
    refresh: bool = False,
    head_by_compare: bool = False,
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
        head_by_compare=head_by_compare,
        bot_login=services.settings.bot_login,
        cache=services.cache,
        replay_prunes=replay_prunes,
    )


@router.register("push")
@handler_id("pins.push")
async def on_push(event: sansio.Event, services: Services) -> None:
    ref = field(event.data, "ref")
    pushed = field(event.data, "repository.full_name").lower()
    default_branch = optional(event.data, "repository.default_branch")
    deleted = optional(event.data, "deleted", bool)
    login = optional(event.data, "sender.login")
    if not ref.startswith(BRANCH_REF) or deleted is True:
        return
    push = Push(pushed, ref.removeprefix(BRANCH_REF), default_branch, login, event.data)
    for downstream in services.settings.repositories:
        select = _push_selection(services, downstream, push)
        if select is not None:
            delivery = sync_delivery(event.delivery_id, downstream, select, services.clock())
            await services.followups.submit(delivery)


@router.register("create")
@handler_id("pins.tag-created")
async def on_tag_created(event: sansio.Event, services: Services) -> None:
    tagged = field(event.data, "repository.full_name")
    if field(event.data, "ref_type") != "tag":
        return  # a new branch: its first push is what moves branch pins
    await _sync_tag_pins(event.delivery_id, tagged, services)


@router.register("release", action="published")
@handler_id("pins.release-published")
async def on_release_published(event: sansio.Event, services: Services) -> None:
    tagged = field(event.data, "repository.full_name")
    await _sync_tag_pins(event.delivery_id, tagged, services)


async def _sync_tag_pins(delivery_id: str, tagged: str, services: Services) -> None:
    """Look at the pins following the tags of the repository that made a new one."""
    for downstream in services.settings.repositories:
        if downstream.lower() != tagged.lower():  # the downstream's own tags pin nothing
            select = {"upstream": tagged.lower(), "tags": True}
            delivery = sync_delivery(delivery_id, downstream, select, services.clock())
            await services.followups.submit(delivery)


@dataclass(frozen=True)
class Push:
    repository: str  # lower case
    branch: str
    default_branch: str | None
    sender: str | None
    payload: Mapping[str, Any] = field_(default_factory=dict)  # what the push touched


def _push_selection(services: Services, downstream: str, push: Push) -> Mapping[str, Any] | None:
    """Which pins of ``downstream`` the push may move (None: none)."""
    if downstream.lower() != push.repository:
        return {"upstream": push.repository, "branch": push.branch}
    if push.branch == push.default_branch:
        return main_push_selection(push.payload)
    if (
        push.branch.startswith(bump_text.BRANCH_PREFIX)
        and push.sender != services.settings.bot_login
    ):
        # A human pushed to a bump branch: look now, so the bot steps back at once.
        return {"pin": push.branch.removeprefix(bump_text.BRANCH_PREFIX)}
    return None


@router.register(SYNC_EVENT)
@handler_id("pins.sync")
async def on_sync(event: sansio.Event, services: Services) -> None:
    downstream = field(event.data, "repository.full_name")
    selection = field(event.data, "select", dict)
    select, pushed = _selector(selection), _upstream_push(selection)
    repo = services.served(downstream)
    if repo is None:
        log.info(LOG_NOT_SERVED, "sync", downstream)
        return
    await _sync(services, repo.full_name, select, head_by_compare=pushed)


@router.register(RECONCILE_EVENT)
@handler_id("pins.reconcile")
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    downstream = field(event.data, "repository.full_name")
    repo = services.served(downstream)
    if repo is None:
        log.info(LOG_NOT_SERVED, "reconcile", downstream)
        return
    await _sync(services, repo.full_name, _every_pin, refresh=True)


def _selector(select: Mapping[str, Any]) -> bump.PinSelector:
    name = optional(select, "pin")
    if name is not None:
        return lambda pin: pin.name == name
    files = optional(select, "files", list)
    if files is not None:
        touched = frozenset(str(path) for path in files)
        return lambda pin: touches(pin, touched)
    upstream, branch = optional(select, "upstream"), optional(select, "branch")
    if upstream is not None and optional(select, "tags", bool) is True:
        return lambda pin: pin.upstream.lower() == upstream.lower() and pin.track == "tags"
    if upstream is not None and branch is not None:
        return lambda pin: (
            pin.upstream.lower() == upstream.lower()
            and pin.track == "branch"
            and pin.branch == branch
        )
    return _every_pin


def _upstream_push(select: Mapping[str, Any]) -> bool:
    """Whether the sync follows a push to an upstream branch (its pins compare anyway)."""
    return optional(select, "branch") is not None and optional(select, "upstream") is not None


def _every_pin(_pin: PinConfig) -> bool:
    return True
