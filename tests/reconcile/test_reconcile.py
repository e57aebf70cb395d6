"""The reconcile tick: one internal delivery per repository and time bucket."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from bot.service.reconcile import (
    LOG_NO_LEADER,
    enqueue_tick,
    reconcile_delivery,
    reconcile_forever,
)
from bot.service.sources import RECONCILE_EVENT
from bot.store.protocol import Delivery


class RecordingInbox:
    """What reconcile needs of an inbox: submit, with the store's dedupe on delivery ids."""

    def __init__(self, expected: int) -> None:
        self.seen: dict[str, Delivery] = {}
        self.enough = asyncio.Event()
        self.expected = expected

    async def submit(self, delivery: Delivery) -> bool:
        if delivery.delivery_id in self.seen:
            return False
        self.seen[delivery.delivery_id] = delivery
        if len(self.seen) >= self.expected:
            self.enough.set()
        return True


def test_delivery_names_the_repository_and_the_time_bucket() -> None:
    delivery = reconcile_delivery("vllm-project/vllm", 1000.0, 300.0)
    assert delivery.delivery_id == "reconcile:vllm-project/vllm:3"
    assert delivery.event == RECONCILE_EVENT
    assert delivery.source == "internal"
    assert delivery.subject == "reconcile:vllm-project/vllm"
    assert json.loads(delivery.payload) == {"repository": {"full_name": "vllm-project/vllm"}}


async def test_a_tick_in_the_same_bucket_adds_nothing() -> None:
    inbox = RecordingInbox(expected=99)
    repos = ("a/b", "c/d")
    assert await enqueue_tick(inbox, repos, 1000.0, 300.0) == 2
    assert await enqueue_tick(inbox, repos, 1100.0, 300.0) == 0
    assert await enqueue_tick(inbox, repos, 1200.0, 300.0) == 2


async def test_reconcile_forever_ticks_until_cancelled() -> None:
    inbox = RecordingInbox(expected=3)
    now = iter(float(t) for t in range(0, 10_000, 100))
    task = asyncio.create_task(reconcile_forever(inbox, ("a/b",), 0.001, lambda: next(now) * 1000))
    await asyncio.wait_for(inbox.enough.wait(), 10)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert len(inbox.seen) >= 3


async def test_only_the_replica_holding_the_lock_ticks(caplog: pytest.LogCaptureFixture) -> None:
    """Asked each tick: not the leader (False), the database away (raises), then leader."""
    answers: list[bool | Exception] = [False, OSError("database away"), True]
    asked = 0

    async def leader() -> bool:
        nonlocal asked
        answer = answers[min(asked, len(answers) - 1)]
        asked += 1
        if isinstance(answer, Exception):
            raise answer
        return answer

    inbox = RecordingInbox(expected=1)
    now = iter(float(t) for t in range(0, 10_000, 100))
    task = asyncio.create_task(
        reconcile_forever(inbox, ("a/b",), 0.001, lambda: next(now) * 1000, leader=leader)
    )
    await asyncio.wait_for(inbox.enough.wait(), 10)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert asked >= 3  # the first two ticks added nothing; the third did
    assert LOG_NO_LEADER in caplog.messages
