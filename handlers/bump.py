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
from bot.context.followups import sync_delivery
from bot.context.handler_ids import handler_id
from bot.context.scope import repo_scope
from bot.context.services import Services
from bot.core.payload import field, optional
from bot.core.sources import RECONCILE_EVENT, SYNC_EVENT
from bot.github.changes import Repo
from bot.pins import bump
from bot.pins import text as bump_text
from bot.pins.selection import Selection

log = logging.getLogger(__name__)
router = routing.Router()

BRANCH_REF = "refs/heads/"
LOG_NOT_SERVED = "%s for %s skipped: not in FOLLOWUP_BOT_REPOSITORIES"


async def _sync(
    services: Services,
    repo: Repo,
    select: Selection,
    *,
    refresh: bool = False,
    head_by_compare: bool = False,
) -> None:
    scope = await repo_scope(services, repo)
    if scope is None:
        return  # no usable config: load_config recorded why
    await bump.sync_repo(
        scope,
        select=select,
        refresh=refresh,
        head_by_compare=head_by_compare,
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
            delivery = sync_delivery(event.delivery_id, downstream, select.dump(), services.clock())
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
            select = Selection.upstream_tags(tagged).dump()
            delivery = sync_delivery(delivery_id, downstream, select, services.clock())
            await services.followups.submit(delivery)


@dataclass(frozen=True)
class Push:
    repository: str  # lower case
    branch: str
    default_branch: str | None
    sender: str | None
    payload: Mapping[str, Any] = field_(default_factory=dict)  # what the push touched


def _push_selection(services: Services, downstream: str, push: Push) -> Selection | None:
    """Which pins of ``downstream`` the push may move (None: none)."""
    if downstream.lower() != push.repository:
        return Selection.upstream_branch(push.repository, push.branch)
    if push.branch == push.default_branch:
        return Selection.main_push(push.payload)
    if (
        push.branch.startswith(bump_text.BRANCH_PREFIX)
        and push.sender != services.settings.bot_login
    ):
        # A human pushed to a bump branch: look now, so the bot steps back at once.
        return Selection.of_pin(push.branch.removeprefix(bump_text.BRANCH_PREFIX))
    return None


@router.register(SYNC_EVENT)
@handler_id("pins.sync")
async def on_sync(event: sansio.Event, services: Services) -> None:
    downstream = field(event.data, "repository.full_name")
    select = Selection.load(field(event.data, "select", dict))
    repo = services.served(downstream)
    if repo is None:
        log.info(LOG_NOT_SERVED, "sync", downstream)
        return
    await _sync(services, repo, select, head_by_compare=select.upstream_push)


@router.register(RECONCILE_EVENT)
@handler_id("pins.reconcile")
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    downstream = field(event.data, "repository.full_name")
    repo = services.served(downstream)
    if repo is None:
        log.info(LOG_NOT_SERVED, "reconcile", downstream)
        return
    await _sync(services, repo, Selection.every(), refresh=True)
