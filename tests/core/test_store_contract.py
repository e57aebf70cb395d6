"""The store contract: every test here runs on both backends, SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses

import pytest

from bot.store.protocol import DeliveryStatus, EnqueueResult, Requeue, Store, UnknownDelivery

from .helpers import make_delivery


@pytest.fixture
def store(any_store: Store) -> Store:
    return any_store


async def test_enqueue_then_get(store: Store) -> None:
    delivery = make_delivery("d1", "pin:fa", received_at=5.0)
    assert await store.enqueue(delivery) is True
    record = await store.get_delivery("d1")
    assert record is not None
    assert record.delivery == delivery
    assert record.status is DeliveryStatus.QUEUED
    assert record.next_attempt_at == 5.0
    assert record.last_error is None
    assert await store.get_delivery("unknown") is None


async def test_enqueue_dedupes_on_delivery_id_in_every_status(store: Store) -> None:
    assert await store.enqueue(make_delivery("d1"))
    assert not await store.enqueue(make_delivery("d1", "other subject"))
    claimed = await store.claim(2000.0, frozenset())
    assert claimed is not None
    assert not await store.enqueue(make_delivery("d1"))  # RUNNING
    await store.finish("d1")
    assert not await store.enqueue(make_delivery("d1"))  # DONE
    assert await store.enqueue(make_delivery("d2"))
    await store.fail("d2", "no")
    assert not await store.enqueue(make_delivery("d2"))  # FAILED
    record = await store.get_delivery("d1")
    assert record is not None
    assert record.delivery.subject == "subject"


async def test_claim_takes_the_oldest_due_and_counts_the_attempt(store: Store) -> None:
    await store.enqueue(make_delivery("late", "a", received_at=20.0))
    await store.enqueue(make_delivery("early", "b", received_at=10.0))
    await store.enqueue(make_delivery("future", "c", received_at=99.0))
    assert await store.claim(5.0, frozenset()) is None  # nothing due yet
    first = await store.claim(50.0, frozenset())
    assert first is not None
    assert first.delivery_id == "early"
    assert first.attempts == 1
    record = await store.get_delivery("early")
    assert record is not None
    assert record.status is DeliveryStatus.RUNNING
    assert record.delivery.attempts == 1
    second = await store.claim(50.0, frozenset())
    assert second is not None
    assert second.delivery_id == "late"
    assert await store.claim(50.0, frozenset()) is None  # "future" is not due at 50


async def test_claim_breaks_timestamp_ties_by_arrival(store: Store) -> None:
    for name in ("x", "y", "z"):
        await store.enqueue(make_delivery(name, name, received_at=1.0))
    order = []
    for _ in range(3):
        claimed = await store.claim(1.0, frozenset())
        assert claimed is not None
        order.append(claimed.delivery_id)
    assert order == ["x", "y", "z"]


async def test_claim_skips_busy_and_running_subjects(store: Store) -> None:
    await store.enqueue(make_delivery("a1", "A", received_at=1.0))
    await store.enqueue(make_delivery("a2", "A", received_at=2.0))
    await store.enqueue(make_delivery("b1", "B", received_at=3.0))
    await store.enqueue(make_delivery("c1", "C", received_at=4.0))
    first = await store.claim(10.0, frozenset())
    assert first is not None
    assert first.delivery_id == "a1"
    # a2 shares a RUNNING subject; B is busy in the caller's process.
    second = await store.claim(10.0, frozenset({"B"}))
    assert second is not None
    assert second.delivery_id == "c1"
    assert await store.claim(10.0, frozenset({"B"})) is None
    await store.finish("a1")
    third = await store.claim(10.0, frozenset({"B"}))
    assert third is not None
    assert third.delivery_id == "a2"


async def test_retry_later_requeues_with_time_and_reason(store: Store) -> None:
    await store.enqueue(make_delivery("d", received_at=1.0))
    await store.claim(1.0, frozenset())
    await store.retry_later("d", 100.0, "TransientError: 502")
    record = await store.get_delivery("d")
    assert record is not None
    assert record.status is DeliveryStatus.QUEUED
    assert (record.next_attempt_at, record.last_error) == (100.0, "TransientError: 502")
    assert await store.next_due() == 100.0
    assert await store.claim(99.0, frozenset()) is None
    again = await store.claim(100.0, frozenset())
    assert again is not None
    assert again.attempts == 2


async def test_finish_and_fail(store: Store) -> None:
    await store.enqueue(make_delivery("ok"))
    await store.enqueue(make_delivery("bad", "other"))
    await store.finish("ok")
    await store.fail("bad", "PermanentError: 404")
    ok, bad = await store.get_delivery("ok"), await store.get_delivery("bad")
    assert ok is not None
    assert ok.status is DeliveryStatus.DONE
    assert ok.last_error is None
    assert bad is not None
    assert bad.status is DeliveryStatus.FAILED
    assert bad.last_error == "PermanentError: 404"
    assert await store.next_due() is None


async def test_status_change_of_unknown_delivery_raises(store: Store) -> None:
    with pytest.raises(UnknownDelivery):
        await store.finish("ghost")
    with pytest.raises(UnknownDelivery):
        await store.retry_later("ghost", 1.0, "x")
    with pytest.raises(UnknownDelivery):
        await store.fail("ghost", "x")
    with pytest.raises(UnknownDelivery):
        await store.mark_handler_done("ghost", "bump")


async def test_requeue_running(store: Store) -> None:
    for name in ("a", "b", "c"):
        await store.enqueue(make_delivery(name, name))
    await store.claim(2000.0, frozenset())
    await store.claim(2000.0, frozenset())
    assert await store.requeue_running() == 2
    assert await store.requeue_running() == 0
    statuses = {r.delivery.delivery_id: r.status for r in await store.list_deliveries()}
    assert set(statuses.values()) == {DeliveryStatus.QUEUED}
    claimed = await store.claim(2000.0, frozenset())
    assert claimed is not None
    assert claimed.attempts == 2


async def test_next_due_is_the_earliest_queued(store: Store) -> None:
    assert await store.next_due() is None
    await store.enqueue(make_delivery("a", "a", received_at=30.0))
    await store.enqueue(make_delivery("b", "b", received_at=20.0))
    assert await store.next_due() == 20.0
    await store.claim(25.0, frozenset())  # takes b: RUNNING is not counted
    assert await store.next_due() == 30.0


async def test_count_unfinished_counts_queued_and_running(store: Store) -> None:
    assert await store.count_unfinished() == 0
    for name in ("a", "b", "c", "d"):
        await store.enqueue(make_delivery(name, name, received_at=1.0))
    await store.claim(1.0, frozenset())  # a: RUNNING
    await store.finish("b")
    await store.fail("c", "x")
    await store.retry_later("d", 1e12, "later")  # QUEUED but not due: still unfinished
    assert await store.count_unfinished() == 2


async def test_list_deliveries_newest_first_with_filter_and_limit(store: Store) -> None:
    for n in range(5):
        await store.enqueue(make_delivery(f"d{n}", f"s{n}", received_at=float(n)))
    await store.fail("d1", "x")
    await store.fail("d3", "y")
    everything = await store.list_deliveries()
    assert [r.delivery.delivery_id for r in everything] == ["d4", "d3", "d2", "d1", "d0"]
    failed = await store.list_deliveries(DeliveryStatus.FAILED)
    assert [r.delivery.delivery_id for r in failed] == ["d3", "d1"]
    assert [r.delivery.delivery_id for r in await store.list_deliveries(limit=2)] == ["d4", "d3"]
    assert await store.list_deliveries(DeliveryStatus.RUNNING) == []


async def test_handler_runs(store: Store) -> None:
    await store.enqueue(make_delivery("d"))
    assert await store.handlers_done("d") == frozenset()
    await store.mark_handler_done("d", "bump")
    await store.mark_handler_done("d", "bump")  # idempotent
    await store.mark_handler_done("d", "landing")
    assert await store.handlers_done("d") == frozenset({"bump", "landing"})
    assert await store.handlers_done("other") == frozenset()


async def test_finish_records_the_last_handlers_in_the_same_transaction(
    store: Store,
) -> None:
    await store.enqueue(make_delivery("d"))
    await store.claim(2000.0, frozenset())
    await store.finish("d", handlers=("bump", "landing"))
    record = await store.get_delivery("d")
    assert record is not None
    assert record.status is DeliveryStatus.DONE
    assert await store.handlers_done("d") == frozenset({"bump", "landing"})
    # An unknown id changes nothing: the handler rows roll back with the status.
    with pytest.raises(UnknownDelivery):
        await store.finish("ghost", handlers=("bump",))
    assert await store.handlers_done("ghost") == frozenset()


async def test_a_delivery_no_handler_wants_is_stored_done(store: Store) -> None:
    unwanted = dataclasses.replace(make_delivery("u"), wanted=False)
    assert await store.enqueue(unwanted)
    record = await store.get_delivery("u")
    assert record is not None
    assert record.status is DeliveryStatus.DONE
    assert await store.claim(2000.0, frozenset()) is None
    assert await store.count_unfinished() == 0
    assert not await store.enqueue(unwanted)  # a redelivery is a duplicate


async def test_state_documents(store: Store) -> None:
    assert await store.get_state("bump", "flash-attention") is None
    await store.put_state("bump", "flash-attention", {"branch": "b", "pr": 7, "shas": ["x"]})
    await store.put_state("bump", "cutlass", {"pr": None})
    await store.put_state("reply", "flash-attention", {"comment": 1})
    assert await store.get_state("bump", "flash-attention") == {
        "branch": "b",
        "pr": 7,
        "shas": ["x"],
    }
    await store.put_state("bump", "flash-attention", {"pr": 8})  # replaces the whole document
    assert await store.list_state("bump") == [
        ("cutlass", {"pr": None}),
        ("flash-attention", {"pr": 8}),
    ]
    await store.delete_state("bump", "cutlass")
    await store.delete_state("bump", "never-there")
    assert await store.list_state("bump") == [("flash-attention", {"pr": 8})]
    assert await store.list_state("reply") == [("flash-attention", {"comment": 1})]


async def test_state_rejects_non_objects(store: Store) -> None:
    with pytest.raises(TypeError):
        await store.put_state("k", "x", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await store.put_state("k", "x", {"v": object()})
    assert await store.get_state("k", "x") is None


async def test_requeue_replays_failed_and_on_request_done_deliveries(store: Store) -> None:
    await store.enqueue(make_delivery("f", "F"))
    await store.enqueue(make_delivery("d", "D"))
    await store.enqueue(make_delivery("q", "Q"))
    for _ in range(2):
        assert await store.claim(2000.0, frozenset()) is not None
    await store.fail("f", "broken")
    await store.finish("d", handlers=("h",))

    assert await store.requeue("nope", 3000.0) == Requeue(None, False)
    assert await store.requeue("q", 3000.0) == Requeue(DeliveryStatus.QUEUED, False)
    assert await store.requeue("d", 3000.0) == Requeue(DeliveryStatus.DONE, False)
    assert await store.requeue("f", 3000.0) == Requeue(DeliveryStatus.FAILED, True)
    assert await store.requeue("d", 3000.0, include_done=True) == Requeue(
        DeliveryStatus.DONE, True, 1
    )
    assert await store.handlers_done("d") == frozenset()
    replayed = await store.get_delivery("f")
    assert replayed is not None
    assert (replayed.status, replayed.next_attempt_at) == (DeliveryStatus.QUEUED, 3000.0)
    assert replayed.delivery.attempts == 0


async def test_a_redelivery_of_a_failed_delivery_is_queued_again(store: Store) -> None:
    await store.enqueue(make_delivery("f", "F"))
    assert await store.claim(2000.0, frozenset()) is not None
    await store.fail("f", "broken")
    again = make_delivery("f", "F", received_at=5000.0)
    assert await store.enqueue_or_requeue(again) is EnqueueResult.REQUEUED
    assert await store.enqueue_or_requeue(again) is EnqueueResult.DUPLICATE
    assert await store.enqueue_or_requeue(make_delivery("n", "N")) is EnqueueResult.NEW
