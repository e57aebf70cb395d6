"""The workers' turns: an attempt's end and the next claim, batched into one transaction."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from bot.core.blocking import BlockingRunner
from bot.service.inbox import LOG_VANISHED, Inbox
from bot.store.coalesce import Coalescer
from bot.store.protocol import (
    RETRY_NEEDS_A_TIME,
    SETTLED_AS_RUNNING,
    Delivery,
    DeliveryStatus,
    InboxStats,
    Settlement,
    Store,
    UnknownDelivery,
)
from bot.store.sqlite import SQLiteStore

from .helpers import make_delivery

SAFETY = 10.0


class BatchCountingStore(SQLiteStore):
    """The real store, counting the transactions its turns were written in."""

    def __init__(self, path: str, blocking: BlockingRunner) -> None:
        super().__init__(path, blocking)
        self.batches: list[int] = []

    async def _write_turns(self, batch: list[Any]) -> list[Delivery | BaseException | None]:
        self.batches.append(len(batch))
        return await super()._write_turns(batch)


@pytest.fixture
def store(any_store: Store) -> Store:
    """The turns' contract on both backends (``counting`` looks inside SQLite's)."""
    return any_store


@pytest.fixture
async def counting(blocking: BlockingRunner) -> AsyncIterator[BatchCountingStore]:
    store = BatchCountingStore(":memory:", blocking)
    await store.open()
    yield store
    await store.close()


def done(delivery_id: str, *handlers: str) -> Settlement:
    return Settlement(delivery_id, DeliveryStatus.DONE, handlers=handlers)


# -- Settlement ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retry_at", "message"),
    [
        (DeliveryStatus.RUNNING, None, SETTLED_AS_RUNNING),
        (DeliveryStatus.QUEUED, None, RETRY_NEEDS_A_TIME),
        (DeliveryStatus.DONE, 5.0, RETRY_NEEDS_A_TIME),
    ],
)
def test_a_settlement_says_how_an_attempt_can_end(
    status: DeliveryStatus, retry_at: float | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Settlement("d", status, retry_at=retry_at)


# -- Coalescer -----------------------------------------------------------------------


class Writer:
    """A batch writer whose first batch waits for a gate, so others queue behind it."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = asyncio.Event()
        self.fail_batch: Exception | None = None

    async def __call__(self, batch: list[int]) -> Sequence[int | BaseException]:
        self.batches.append(batch)
        if len(self.batches) == 1:
            await self.gate.wait()
        if self.fail_batch is not None:
            raise self.fail_batch
        return [ValueError(f"odd {n}") if n % 2 else n * 10 for n in batch]


async def test_requests_made_during_a_write_go_together_in_the_next_batch() -> None:
    writer = Writer()
    coalescer: Coalescer[int, int] = Coalescer(writer, "test")
    first = asyncio.ensure_future(coalescer.submit(0))
    await asyncio.sleep(0)  # the first batch starts and waits on the gate
    rest = [asyncio.ensure_future(coalescer.submit(n)) for n in (2, 3, 4)]
    await asyncio.sleep(0)
    writer.gate.set()
    assert await first == 0
    answers = await asyncio.gather(*rest, return_exceptions=True)
    assert writer.batches == [[0], [2, 3, 4]]
    assert answers[0] == 20
    assert answers[2] == 40
    assert isinstance(answers[1], ValueError)
    assert str(answers[1]) == "odd 3"


async def test_a_failed_batch_fails_each_of_its_requests() -> None:
    writer = Writer()
    writer.gate.set()
    writer.fail_batch = OSError("disk on fire")
    coalescer: Coalescer[int, int] = Coalescer(writer, "test")
    results = await asyncio.gather(coalescer.submit(2), coalescer.submit(4), return_exceptions=True)
    assert [str(r) for r in results] == ["disk on fire", "disk on fire"]
    await coalescer.wait_written()  # nothing pending: returns at once


async def test_a_caller_that_stops_waiting_does_not_cancel_the_batch() -> None:
    writer = Writer()
    coalescer: Coalescer[int, int] = Coalescer(writer, "test")
    impatient = asyncio.ensure_future(coalescer.submit(0))
    patient = asyncio.ensure_future(coalescer.submit(2))
    await asyncio.sleep(0)
    impatient.cancel()
    writer.gate.set()
    assert await patient == 20
    await coalescer.wait_written()
    assert writer.batches == [[0, 2]]


async def test_a_cancelled_writer_cancels_the_waiting_requests() -> None:
    writer = Writer()
    coalescer: Coalescer[int, int] = Coalescer(writer, "test")
    waiting = asyncio.ensure_future(coalescer.submit(0))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the writer has started and waits on the gate
    drain = coalescer._writer
    assert drain is not None
    drain.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


# -- SQLite turns ----------------------------------------------------------------------


async def test_turns_of_several_workers_are_one_transaction(
    counting: BatchCountingStore,
) -> None:
    for n in range(4):
        await counting.enqueue(make_delivery(f"d{n}", f"S{n}", received_at=1000.0 + n))
    first = await counting.claim(2000.0, frozenset())
    assert first is not None
    assert first.delivery_id == "d0"
    counting.batches.clear()

    claimed = await asyncio.gather(
        counting.settle_and_claim(done("d0", "h1"), 2000.0, frozenset()),
        counting.settle_and_claim(None, 2000.0, frozenset()),
        counting.settle_and_claim(None, 2000.0, frozenset()),
    )

    assert counting.batches == [3]  # three workers' turns, one transaction
    assert sorted(d.delivery_id for d in claimed if d is not None) == ["d1", "d2", "d3"]
    assert await counting.handlers_done("d0") == {"h1"}
    record = await counting.get_delivery("d0")
    assert record is not None
    assert record.status is DeliveryStatus.DONE


async def test_an_end_frees_its_subject_for_a_claim_of_the_same_batch(
    counting: BatchCountingStore,
) -> None:
    await counting.enqueue(make_delivery("a1", "S", received_at=1.0))
    await counting.enqueue(make_delivery("a2", "S", received_at=2.0))
    assert await counting.claim(10.0, frozenset()) is not None  # a1 RUNNING: S is busy
    assert await counting.claim(10.0, frozenset()) is None
    counting.batches.clear()
    # A worker that only claims, then one that ends a1, in one batch: ends come first.
    other, mine = await asyncio.gather(
        counting.settle_and_claim(None, 10.0, frozenset()),
        counting.settle_and_claim(done("a1"), 10.0, frozenset(), claim=False),
    )
    assert counting.batches == [2]
    assert mine is None  # it asked for no claim
    assert other is not None
    assert other.delivery_id == "a2"


async def test_a_claim_carries_the_handlers_already_done(store: Store) -> None:
    await store.enqueue(make_delivery("d", "S"))
    await store.mark_handler_done("d", "pins.bump")
    claimed = await store.claim(2000.0, frozenset())
    assert claimed is not None
    assert claimed.handlers_done == frozenset({"pins.bump"})
    assert claimed.attempts == 1


async def test_an_unknown_id_fails_its_own_turn_only(counting: BatchCountingStore) -> None:
    await counting.enqueue(make_delivery("d", "S"))
    results = await asyncio.gather(
        counting.settle_and_claim(done("nope"), 2000.0, frozenset()),
        counting.settle_and_claim(None, 2000.0, frozenset()),
        return_exceptions=True,
    )
    assert counting.batches == [2]
    assert isinstance(results[0], UnknownDelivery)
    assert isinstance(results[1], Delivery)
    assert results[1].delivery_id == "d"


async def test_a_retry_and_a_failure_are_recorded_with_their_reason(store: Store) -> None:
    await store.enqueue(make_delivery("r", "R"))
    await store.enqueue(make_delivery("f", "F"))
    assert await store.claim(2000.0, frozenset()) is not None
    assert await store.claim(2000.0, frozenset()) is not None
    retry = Settlement("r", DeliveryStatus.QUEUED, retry_at=3000.0, reason="502")
    await store.settle_and_claim(retry, 2000.0, frozenset(), claim=False)
    await store.fail("f", "bad payload")
    r, f = await store.get_delivery("r"), await store.get_delivery("f")
    assert r is not None
    assert (r.status, r.next_attempt_at, r.last_error) == (
        DeliveryStatus.QUEUED,
        3000.0,
        "502",
    )
    assert f is not None
    assert (f.status, f.last_error) == (DeliveryStatus.FAILED, "bad payload")


# -- the inbox on top ----------------------------------------------------------------


async def test_the_worker_gets_the_payload_the_intake_parsed(store: Store) -> None:
    parsed: dict[str, Any] = {"action": "created", "n": 1}
    seen: list[tuple[Mapping[str, Any] | None, frozenset[str] | None]] = []

    async def dispatcher(delivery: Delivery) -> None:
        seen.append((delivery.parsed, delivery.handlers_done))

    inbox = Inbox(store, dispatcher, workers=1)
    await inbox.start()
    try:
        await inbox.admit(
            dataclasses.replace(make_delivery("p", "S", payload=parsed), parsed=parsed)
        )
        await inbox.submit(make_delivery("q", "S", received_at=1001.0))  # nothing parsed
        await asyncio.wait_for(inbox.wait_idle(), SAFETY)
    finally:
        await inbox.stop()
    assert seen[0][0] is parsed  # the very object: parsed once
    assert seen[1] == (None, frozenset())  # parsed by dispatch; the claim read the log


async def test_parsed_payloads_kept_for_workers_are_bounded(store: Store) -> None:
    inbox = Inbox(store, lambda d: asyncio.sleep(0), workers=1)  # never started
    for n in range(1030):
        body = {"n": n}
        await inbox.submit(dataclasses.replace(make_delivery(f"d{n}", payload=body), parsed=body))
    assert len(inbox._parsed) == 1024
    assert "d0" not in inbox._parsed
    assert "d1029" in inbox._parsed


async def test_a_delivery_deleted_while_it_runs_is_logged_and_work_goes_on(
    tmp_path: Path, blocking: BlockingRunner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.service.inbox")
    path = str(tmp_path / "bot.sqlite3")
    store = SQLiteStore(path, blocking)
    await store.open()
    ran: list[str] = []

    async def dispatcher(delivery: Delivery) -> None:
        ran.append(delivery.delivery_id)
        if delivery.delivery_id == "gone":  # an operator deletes the row by hand
            with sqlite3.connect(path) as other:
                other.execute("DELETE FROM deliveries WHERE delivery_id = 'gone'")

    inbox = Inbox(store, dispatcher, workers=1)
    await inbox.start()
    try:
        await inbox.submit(make_delivery("gone", "S", received_at=1.0))
        await inbox.submit(make_delivery("next", "S", received_at=2.0))
        await asyncio.wait_for(inbox.wait_idle(), SAFETY)
    finally:
        await inbox.stop()
        await store.close()
    assert ran == ["gone", "next"]
    assert LOG_VANISHED % "gone" in caplog.messages


async def test_inbox_stats_count_queued_and_running_and_the_oldest_arrival(
    store: Store,
) -> None:
    assert await store.inbox_stats() == InboxStats(0, 0, None)
    await store.enqueue(make_delivery("old", "A", received_at=5.0))
    await store.enqueue(make_delivery("new", "B", received_at=9.0))
    await store.enqueue(make_delivery("later", "C", received_at=7.0))
    assert await store.claim(100.0, frozenset()) is not None  # "old" runs
    await store.ping()
    assert await store.inbox_stats() == InboxStats(queued=2, running=1, oldest_queued_at=7.0)
