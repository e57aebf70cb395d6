"""A delivery is heard only in the namespace of the secret that signed it.

The harness gives GitHub and Buildkite the same secret on purpose: a Buildkite
credential that could speak as GitHub is exactly what these tests forge.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

import aiohttp
import pytest

from bot.core.errors import PermanentError
from bot.core.sources import (
    BUILD_FINISHED,
    RECONCILE_EVENT,
    REFUSED_EVENT,
    SYNC_EVENT,
    routed_event,
)
from bot.service.app import DEFAULT_ROUTERS
from bot.service.dispatch import build_dispatcher
from bot.store.kinds import Kind
from bot.store.protocol import Delivery, DeliveryStatus
from sandbox.buildkite_webhooks import signature_header
from sandbox.github_webhooks import sign
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM
from tests.e2e.test_pin_commands import MAINTAINER, bot_replies, setup


@pytest.mark.parametrize(
    ("source", "event", "routed"),
    [
        ("github", "issue_comment", "issue_comment"),
        ("github", "pull_request_review", "pull_request_review"),
        ("github", RECONCILE_EVENT, None),
        ("github", SYNC_EVENT, None),
        ("github", "buildkite:build.finished", None),
        ("github", "build.finished", None),
        ("buildkite", "build.finished", BUILD_FINISHED),
        ("buildkite", "issue_comment", "buildkite:issue_comment"),
        ("buildkite", RECONCILE_EVENT, None),
        ("buildkite", "", None),
        ("internal", RECONCILE_EVENT, RECONCILE_EVENT),
        ("internal", "issue_comment", None),
        ("elsewhere", "issue_comment", None),
        ("github", "Issue_Comment", None),
        ("github", "issue_comment\n", None),
    ],
)
def test_each_source_has_its_own_namespace(source: str, event: str, routed: str | None) -> None:
    assert routed_event(source, event) == routed


def _last_payload(env: Harness, event: str) -> dict[str, Any]:
    delivery = next(d for d in reversed(env.sandbox.deliveries) if d.event == event)
    copy: dict[str, Any] = json.loads(json.dumps(delivery.payload))
    return copy


async def _post_as_buildkite(env: Harness, event: str, payload: Mapping[str, Any]) -> int:
    body = json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "X-Buildkite-Event": event,
        "X-Buildkite-Signature": signature_header(
            env.settings.webhook_secret, int(time.time()), body
        ),
        "X-Buildkite-Request": str(uuid.uuid4()),
    }
    async with aiohttp.ClientSession() as session:
        url = env.running.buildkite_webhook_url
        async with session.post(url, data=body, headers=headers) as response:
            return response.status


async def _post_as_github(env: Harness, event: str, payload: Mapping[str, Any]) -> int:
    body = json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        **sign(env.settings.webhook_secret, body),
    }
    url = env.running.webhook_url
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers) as response,
    ):
        return response.status


async def test_a_buildkite_signed_comment_is_not_obeyed(ci_env: Harness) -> None:
    number = await setup(ci_env)
    ci_env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot help")
    await ci_env.settle()
    replies = len(bot_replies(ci_env, number))
    forged = _last_payload(ci_env, "issue_comment")
    forged["comment"]["id"] += 1000
    forged["comment"]["body"] = "@bot pause flash-attention"

    assert await _post_as_buildkite(ci_env, "issue_comment", forged) == 202
    await ci_env.settle()

    store = ci_env.running.services.store
    assert await store.get_state(Kind.PAUSE, f"{DOWNSTREAM}#flash-attention") is None
    assert len(bot_replies(ci_env, number)) == replies


async def test_a_buildkite_signed_approval_does_not_start_landing(ci_env: Harness) -> None:
    number = await setup(ci_env)
    pull = next(p for p in ci_env.sandbox.pulls(DOWNSTREAM) if p["number"] == number)
    forged = {
        "action": "submitted",
        "review": {
            "id": 999,
            "state": "approved",
            "user": {"login": MAINTAINER},
            "commit_id": pull["head"]["sha"],
        },
        "pull_request": pull,
        "repository": {"full_name": DOWNSTREAM},
        "sender": {"login": MAINTAINER},
    }
    assert await _post_as_buildkite(ci_env, "pull_request_review", forged) == 202
    await ci_env.settle()

    labels = [label["name"] for label in ci_env.sandbox.pulls(DOWNSTREAM)[0]["labels"]]
    assert labels == []


@pytest.mark.parametrize("event", [RECONCILE_EVENT, SYNC_EVENT])
async def test_internal_events_cannot_come_from_github(ci_env: Harness, event: str) -> None:
    await setup(ci_env)
    before = len(ci_env.sandbox.pulls(DOWNSTREAM))
    payload = {"repository": {"full_name": DOWNSTREAM}, "select": {"all": True}}

    status = await _post_as_github(ci_env, event, payload)
    await ci_env.settle()

    assert status == 400  # refused at the door: never stored, never dispatched
    assert len(ci_env.sandbox.pulls(DOWNSTREAM)) == before
    failed = await ci_env.running.services.store.list_deliveries(DeliveryStatus.FAILED)
    assert failed == []


@pytest.mark.parametrize(
    ("source", "event"),
    [("github", RECONCILE_EVENT), ("buildkite", SYNC_EVENT), ("elsewhere", "push")],
)
async def test_the_dispatcher_refuses_what_a_source_cannot_send(
    ci_env: Harness, source: str, event: str
) -> None:
    """Behind the intake's check, the dispatcher holds the same line (stored deliveries,
    other intakes)."""
    await ci_env.start()
    dispatch = build_dispatcher(DEFAULT_ROUTERS, ci_env.running.services)
    payload = json.dumps({"repository": {"full_name": DOWNSTREAM}, "select": {"all": True}})
    delivery = Delivery("forged-1", source, event, payload.encode(), "s", 0.0)

    with pytest.raises(PermanentError) as raised:
        await dispatch(delivery)

    assert str(raised.value) == REFUSED_EVENT.format(source=source, event=event)
    assert ci_env.sandbox.requests == []
