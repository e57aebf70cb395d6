"""A sender's redelivery of a FAILED delivery runs it again; any other known id is a duplicate.

Store first (the atomic insert-or-requeue, and the operator's ``requeue``),
then through the real intake and inbox: a delivery fails for good, GitHub's
"Redeliver" posts the same id, it runs again (only the handler that failed)
and succeeds.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.core.errors import PermanentError
from bot.service.inbox import LOG_BODY_DIFFERS, Inbox
from bot.service.webhooks import STATUS_ACCEPTED, STATUS_DUPLICATE, STATUS_REQUEUED
from bot.store.protocol import DeliveryStatus, EnqueueResult, Requeue
from bot.store.sqlite import SQLiteStore

from .helpers import make_delivery
from .service import BROKEN, SAFETY, Handlers, push_body, running_service


async def failed(store: SQLiteStore, delivery_id: str, *, handler: str | None = None) -> None:
    """Store ``delivery_id`` and take it to FAILED the way the inbox does."""
    await store.enqueue(make_delivery(delivery_id, received_at=10.0))
    claimed = await store.claim(20.0, frozenset())
    assert claimed is not None
    assert claimed.delivery_id == delivery_id
    if handler is not None:
        await store.mark_handler_done(delivery_id, handler)
    await store.fail(delivery_id, "PermanentError: boom")


# -- the store -------------------------------------------------------------------------


async def test_a_new_id_is_new_and_a_queued_running_or_done_one_a_duplicate(
    store: SQLiteStore,
) -> None:
    assert await store.enqueue_or_requeue(make_delivery("d")) is EnqueueResult.NEW
    assert await store.enqueue_or_requeue(make_delivery("d")) is EnqueueResult.DUPLICATE  # QUEUED
    assert await store.claim(2000.0, frozenset()) is not None
    assert await store.enqueue_or_requeue(make_delivery("d")) is EnqueueResult.DUPLICATE  # RUNNING
    await store.finish("d")
    assert await store.enqueue_or_requeue(make_delivery("d")) is EnqueueResult.DUPLICATE  # DONE
    record = await store.get_delivery("d")
    assert record is not None
    assert record.status is DeliveryStatus.DONE


async def test_a_failed_id_is_requeued_keeping_its_payload_arrival_and_handler_runs(
    store: SQLiteStore,
) -> None:
    await failed(store, "d", handler="handlers.steady")
    again = make_delivery("d", "another subject", received_at=500.0, payload={"other": 1})
    assert await store.enqueue_or_requeue(again) is EnqueueResult.REQUEUED

    record = await store.get_delivery("d")
    assert record is not None
    assert record.status is DeliveryStatus.QUEUED
    assert record.next_attempt_at == 500.0  # due now, as of the redelivery
    assert record.delivery == make_delivery("d", received_at=10.0)  # attempts back to 0
    assert record.last_error == "PermanentError: boom"  # until the next attempt says otherwise
    assert await store.handlers_done("d") == frozenset({"handlers.steady"})
    # Queued again, so a second redelivery is a duplicate, and retention keeps it.
    assert await store.enqueue_or_requeue(again) is EnqueueResult.DUPLICATE
    assert (await store.prune(1e12, ())).deliveries == 0


async def test_internal_submissions_still_drop_a_failed_id(store: SQLiteStore) -> None:
    await failed(store, "d")
    assert await store.enqueue(make_delivery("d")) is False
    record = await store.get_delivery("d")
    assert record is not None
    assert record.status is DeliveryStatus.FAILED


async def test_concurrent_redeliveries_requeue_once(store: SQLiteStore) -> None:
    await failed(store, "d")
    results = await asyncio.gather(*(store.enqueue_or_requeue(make_delivery("d")) for _ in "abc"))
    assert sorted(results) == sorted(
        [EnqueueResult.REQUEUED, EnqueueResult.DUPLICATE, EnqueueResult.DUPLICATE]
    )


async def test_requeue_takes_failed_and_with_include_done_done_deliveries(
    store: SQLiteStore,
) -> None:
    assert await store.requeue("nobody", 1.0) == Requeue(None, False)
    await store.enqueue(make_delivery("queued"))
    assert await store.requeue("queued", 1.0) == Requeue(DeliveryStatus.QUEUED, False)
    assert await store.requeue("queued", 1.0, include_done=True) == Requeue(
        DeliveryStatus.QUEUED, False
    )
    claimed = await store.claim(2000.0, frozenset())
    assert claimed is not None
    assert await store.requeue("queued", 1.0) == Requeue(DeliveryStatus.RUNNING, False)
    await store.mark_handler_done("queued", "h")
    await store.finish("queued")
    assert await store.requeue("queued", 1.0) == Requeue(DeliveryStatus.DONE, False)
    assert await store.handlers_done("queued") == frozenset({"h"})

    assert await store.requeue("queued", 3.0, include_done=True) == Requeue(
        DeliveryStatus.DONE, True, handlers_forgotten=1
    )
    assert await store.handlers_done("queued") == frozenset()  # all of them run again

    await failed(store, "failed", handler="h")
    assert await store.requeue("failed", 7.0) == Requeue(DeliveryStatus.FAILED, True)
    record = await store.get_delivery("failed")
    assert record is not None
    assert (record.status, record.delivery.attempts, record.next_attempt_at) == (
        DeliveryStatus.QUEUED,
        0,
        7.0,
    )
    assert await store.handlers_done("failed") == frozenset({"h"})  # only the failed ones rerun


async def test_idle_workers_find_work_another_process_queued(store: SQLiteStore) -> None:
    """Nothing in this process rings for a replay from the command line: the poll finds it."""
    outcomes: list[Exception | None] = [PermanentError("boom"), None]
    calls: list[int] = []

    async def dispatch(delivery: object) -> None:
        calls.append(1)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    inbox = Inbox(store, dispatch, workers=2, poll_interval=0.05)
    await inbox.start()
    try:
        await inbox.submit(make_delivery("d"))
        await asyncio.wait_for(inbox.wait_idle(), SAFETY)
        assert (await store.requeue("d", 0.0)).requeued  # behind the inbox's back
        await asyncio.wait_for(inbox.wait_idle(), SAFETY)
    finally:
        await inbox.stop()
    record = await store.get_delivery("d")
    assert record is not None
    assert (record.status, record.delivery.attempts, len(calls)) == (DeliveryStatus.DONE, 1, 2)


def test_the_poll_interval_must_be_positive(store: SQLiteStore) -> None:
    async def dispatch(delivery: object) -> None: ...

    with pytest.raises(ValueError, match="poll_interval"):
        Inbox(store, dispatch, poll_interval=0.0)


# -- through the intake -----------------------------------------------------------------


async def test_redelivering_a_failed_delivery_runs_only_its_failed_handler_again(
    tmp_path: Path,
) -> None:
    handlers = Handlers()
    async with running_service(tmp_path / "bot.sqlite3", [handlers.router]) as service:
        assert await service.post("d-1", push_body()) == (202, {"status": STATUS_ACCEPTED})
        await service.settle()
        first = await service.record("d-1")
        assert first.status is DeliveryStatus.FAILED
        assert BROKEN in (first.last_error or "")

        handlers.broken = False  # what was wrong has been fixed; the operator redelivers
        assert await service.post("d-1", push_body()) == (202, {"status": STATUS_REQUEUED})
        await service.settle()

        record = await service.record("d-1")
        assert (record.status, record.delivery.attempts) == (DeliveryStatus.DONE, 1)
        assert handlers.calls == {"steady": 1, "fragile": 2}

        # Done now: a further redelivery is a duplicate and runs nothing.
        assert await service.post("d-1", push_body()) == (202, {"status": STATUS_DUPLICATE})
        await service.settle()
        assert handlers.calls == {"steady": 1, "fragile": 2}


async def test_a_redelivery_while_queued_or_running_is_a_duplicate(tmp_path: Path) -> None:
    handlers = Handlers()
    handlers.gate = asyncio.Event()
    async with running_service(tmp_path / "bot.sqlite3", [handlers.router]) as service:
        assert await service.post("d-1", push_body()) == (202, {"status": STATUS_ACCEPTED})
        await asyncio.wait_for(handlers.started.wait(), SAFETY)
        assert await service.post("d-1", push_body()) == (202, {"status": STATUS_DUPLICATE})
        handlers.gate.set()
        await service.settle()
        assert handlers.calls["fragile"] == 1
        assert (await service.record("d-1")).status is DeliveryStatus.FAILED


async def test_a_redelivery_with_another_body_runs_the_stored_one_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.service.inbox")
    handlers = Handlers()
    async with running_service(tmp_path / "bot.sqlite3", [handlers.router]) as service:
        await service.post("d-1", push_body(1))
        await service.settle()
        assert LOG_BODY_DIFFERS % "d-1" not in caplog.messages
        handlers.broken = False
        assert await service.post("d-1", push_body(2)) == (202, {"status": STATUS_REQUEUED})
        await service.settle()
        record = await service.record("d-1")
        assert record.status is DeliveryStatus.DONE
        assert record.delivery.payload == push_body(1)
    assert LOG_BODY_DIFFERS % "d-1" in caplog.messages
