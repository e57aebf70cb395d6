"""A delivery no handler wants is stored done at intake: acknowledged (202) as durably as
any other, a duplicate when redelivered, and never claimed by a worker."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import aiohttp

from bot.service.app import DEFAULT_ROUTERS
from bot.service.dispatch import build_wants
from bot.store.protocol import DeliveryStatus
from sandbox.harness import Harness

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


async def post(env: Harness, event: str, payload: dict[str, object], delivery_id: str) -> int:
    """A signed GitHub delivery straight to the bot (the stand-in only sends the webhook
    shapes of its contract slice, and this action is not among them)."""
    body = json.dumps(payload).encode()
    digest = hmac.new(env.settings.webhook_secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": f"sha256={digest}",
        "Content-Type": "application/json",
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(env.running.webhook_url, data=body, headers=headers) as answer,
    ):
        return answer.status


async def test_an_unwanted_delivery_is_done_at_intake(env: Harness) -> None:
    await env.start()
    store = env.running.services.store
    assert await post(env, UNWANTED_EVENT, UNWANTED, "unwanted-1") == 202
    record = await store.get_delivery("unwanted-1")
    assert record is not None
    assert record.status is DeliveryStatus.DONE
    assert record.delivery.attempts == 0  # no worker claimed it
    assert await store.count_unfinished() == 0
    # Redelivered: a duplicate, as a processed delivery is.
    assert await post(env, UNWANTED_EVENT, UNWANTED, "unwanted-1") == 202
    again = await store.get_delivery("unwanted-1")
    assert again is not None
    assert again.status is DeliveryStatus.DONE
    assert await store.handlers_done("unwanted-1") == frozenset()
