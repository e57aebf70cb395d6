"""A delivery no handler wants is stored done at intake: acknowledged (202) as durably as
any other, a duplicate when redelivered, and never claimed by a worker."""

from __future__ import annotations

from typing import Any

from bot.service.app import DEFAULT_ROUTERS
from bot.service.dispatch import build_wants
from bot.store.protocol import DeliveryStatus
from sandbox.harness import Harness
from tests.e2e.test_bump_bad_input import post_signed

UNWANTED_EVENT, WANTED_EVENT = "pull_request", "pull_request"
UNWANTED: dict[str, Any] = {"action": "assigned", "repository": {"full_name": "o/r"}}
WANTED: dict[str, Any] = {"action": "opened", "repository": {"full_name": "o/r"}}


def test_wants_asks_the_routers() -> None:
    wants = build_wants(DEFAULT_ROUTERS)
    assert not wants("github", UNWANTED_EVENT, UNWANTED)
    assert wants("github", WANTED_EVENT, WANTED)
    # What dispatch would refuse is left to dispatch, which records why.
    assert wants("github", "followup-bot.reconcile", {})
    assert wants("github", "pull_request", {"action": ["opened"]})  # unroutable


async def test_an_unwanted_delivery_is_done_at_intake(env: Harness) -> None:
    await env.start()
    store = env.running.services.store
    assert await post_signed(env, UNWANTED_EVENT, UNWANTED, "unwanted-1") == 202
    record = await store.get_delivery("unwanted-1")
    assert record is not None
    assert record.status is DeliveryStatus.DONE
    assert record.delivery.attempts == 0  # no worker claimed it
    assert await store.count_unfinished() == 0
    # Redelivered: a duplicate, as a processed delivery is.
    assert await post_signed(env, UNWANTED_EVENT, UNWANTED, "unwanted-1") == 202
    again = await store.get_delivery("unwanted-1")
    assert again is not None
    assert again.status is DeliveryStatus.DONE
    assert await store.handlers_done("unwanted-1") == frozenset()
