"""The reconcile tick: one internal delivery per repository and time bucket, made soon
after a failed try (never a whole interval late)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable

import asyncpg
import pytest

from bot.core.sources import RECONCILE_EVENT
from bot.service.reconcile import (
    LOG_TICK_FAILED,
    enqueue_tick,
    reconcile_delivery,
    reconcile_forever,
)
from bot.store.outage import LOG_BACK, LOG_UNREACHABLE, Outage
from bot.store.protocol import Delivery


class RecordingInbox:
    """What reconcile needs of an inbox: submit, with the store's dedupe on delivery ids."""

    def __init__(self, expected: int) -> None:
        self.seen: dict[str, Delivery] = {}
        self.enough = asyncio.Event()
        self.expected = expected
        self.outage = Outage(lambda: 0.0)
        self.failures: list[Exception] = []  # raised by the next submits, in order

    async def submit(self, delivery: Delivery) -> bool:
        if self.failures:
            raise self.failures.pop(0)
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
    assert LOG_TICK_FAILED in caplog.messages


HOUR = 3600.0


async def tick_until_enough(
    inbox: RecordingInbox, leader: Callable[[], Awaitable[bool]] | None = None
) -> list[float]:
    """Run the ticker (hourly) until ``inbox`` has what it expects; the waits it took."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if inbox.enough.is_set():
            raise asyncio.CancelledError
        await asyncio.sleep(0)

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(
            reconcile_forever(
                inbox, ("a/b",), HOUR, lambda: 1000.0, leader, rand=lambda: 0.0, sleep=sleep
            ),
            10,
        )
    return waits


async def test_a_lock_not_answered_at_start_up_is_asked_again_at_once() -> None:
    """The start-up race on PostgreSQL: the lock's connection busy with retention's."""
    busy = asyncpg.InterfaceError("cannot perform operation: another operation is in progress")
    answers: list[bool | Exception] = [busy, True]

    async def leader() -> bool:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    inbox = RecordingInbox(expected=1)
    waits = await tick_until_enough(inbox, leader)
    assert waits == [0.25, HOUR]  # the first tick came after a short pause, not an hour


async def test_an_outage_at_tick_time_is_one_line_and_the_tick_comes_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    inbox = RecordingInbox(expected=1)
    lost = asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed")
    inbox.failures = [lost, lost, asyncpg.exceptions.CannotConnectNowError("starting up")]
    waits = await tick_until_enough(inbox)
    assert waits == [0.25, 0.5, 1.0, HOUR]  # growing pauses, then the interval again
    assert list(inbox.seen) == ["reconcile:a/b:0"]
    assert [r.msg for r in caplog.records if r.levelno >= logging.WARNING] == [LOG_UNREACHABLE]
    assert all(r.exc_info is None for r in caplog.records)
    inbox.outage.answered()  # the inbox's workers say so when they reach the store
    assert caplog.records[-1].msg == LOG_BACK
