from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import asyncpg
import pytest

from bot.core.blocking import BlockingRunner
from bot.core.errors import PermanentError, TransientError
from bot.service.attempt_end import GAVE_UP, backoff_delay, failure_reason
from bot.service.inbox import LOG_OUTCOME, LOG_WORKER_ERROR, Inbox
from bot.store.outage import LOG_BACK, LOG_UNREACHABLE
from bot.store.protocol import Delivery, DeliveryRecord, DeliveryStatus, Settlement
from bot.store.sqlite import SQLiteStore

from .helpers import make_delivery

T = TypeVar("T")

# A safety net so a broken inbox fails the test instead of hanging it; no
# assertion depends on how long anything takes.
SAFETY = 10.0


async def settle(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, SAFETY)


class SpyStore(SQLiteStore):
    """The real store, plus events the tests can wait on and one injectable claim failure."""

    def __init__(self, path: str, blocking: BlockingRunner) -> None:
        super().__init__(path, blocking)
        self.retried = asyncio.Event()
        self.failing_claims = 0
        self.failure: Exception = OSError("disk on fire")

    async def settle_and_claim(
        self,
        settled: Settlement | None,
        now: float,
        busy_subjects: frozenset[str],
        *,
        claim: bool = True,
    ) -> Delivery | None:
        if self.failing_claims:
            self.failing_claims -= 1
            raise self.failure
        claimed = await super().settle_and_claim(settled, now, busy_subjects, claim=claim)
        if settled is not None and settled.status is DeliveryStatus.QUEUED:
            self.retried.set()
        return claimed


@pytest.fixture
async def spy(blocking: BlockingRunner) -> AsyncIterator[SpyStore]:
    store = SpyStore(":memory:", blocking)
    await store.open()
    yield store
    await store.close()


@pytest.fixture
async def inboxes() -> AsyncIterator[list[Inbox]]:
    """Inboxes a test starts; all stopped at the end even if the test fails."""
    started: list[Inbox] = []
    yield started
    for inbox in started:
        await inbox.stop()


class Recorder:
    """A dispatcher that records calls and runs a per-call script of outcomes."""

    def __init__(self, *outcomes: BaseException | None) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, delivery: Delivery) -> None:
        self.calls.append((delivery.delivery_id, delivery.attempts))
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome


async def record(store: SQLiteStore, delivery_id: str) -> DeliveryRecord:
    found = await store.get_delivery(delivery_id)
    assert found is not None
    return found


async def run_until_idle(inboxes: list[Inbox], inbox: Inbox, *deliveries: Delivery) -> None:
    inboxes.append(inbox)
    await inbox.start()
    for delivery in deliveries:
        await inbox.submit(delivery)
    await settle(inbox.wait_idle())


@pytest.mark.parametrize(
    ("attempt", "rand", "expected"),
    [
        (1, 0.5, 1.0),
        (2, 0.5, 2.0),
        (3, 1.0, 8.0),
        (10, 1.0, 600.0),
        (10, 0.25, 150.0),
        (4, 0.0, 0.0),
    ],
)
def test_backoff_delay_is_capped_exponential_with_full_jitter(
    attempt: int, rand: float, expected: float
) -> None:
    assert backoff_delay(attempt, 2.0, 600.0, rand) == expected


def test_failure_reason() -> None:
    assert failure_reason(PermanentError("404 on pulls/get")) == "PermanentError: 404 on pulls/get"
    assert failure_reason(ValueError()) == "ValueError"


async def test_deliveries_are_dispatched_and_finished(
    store: SQLiteStore, inboxes: list[Inbox], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.service.inbox")
    dispatcher = Recorder()
    inbox = Inbox(store, dispatcher, workers=2)
    await run_until_idle(inboxes, inbox, make_delivery("a", "A"), make_delivery("b", "B"))
    assert sorted(dispatcher.calls) == [("a", 1), ("b", 1)]
    assert (await record(store, "a")).status is DeliveryStatus.DONE
    assert (await record(store, "b")).status is DeliveryStatus.DONE
    assert "delivery a (push, subject A) attempt 1: done" in caplog.messages
    assert inbox.busy_subjects == frozenset()


async def test_a_duplicate_is_not_dispatched_again(
    store: SQLiteStore, inboxes: list[Inbox]
) -> None:
    dispatcher = Recorder()
    inbox = Inbox(store, dispatcher)
    await run_until_idle(inboxes, inbox, make_delivery("a"))
    assert await inbox.submit(make_delivery("a")) is False
    await settle(inbox.wait_idle())
    assert dispatcher.calls == [("a", 1)]


async def test_transient_failure_is_retried_then_succeeds(
    store: SQLiteStore, inboxes: list[Inbox]
) -> None:
    dispatcher = Recorder(TransientError("502 from GitHub"), None)
    inbox = Inbox(store, dispatcher, backoff_base=0.0)
    await run_until_idle(inboxes, inbox, make_delivery("a"))
    assert dispatcher.calls == [("a", 1), ("a", 2)]
    done = await record(store, "a")
    assert done.status is DeliveryStatus.DONE
    assert done.delivery.attempts == 2


async def test_permanent_failure_is_recorded_with_reason(
    store: SQLiteStore, inboxes: list[Inbox], caplog: pytest.LogCaptureFixture
) -> None:
    dispatcher = Recorder(PermanentError("pin not found"), ValueError("bad payload"))
    inbox = Inbox(store, dispatcher, workers=1, backoff_base=0.0)
    await run_until_idle(inboxes, inbox, make_delivery("a", "A"), make_delivery("b", "B"))
    assert dispatcher.calls == [("a", 1), ("b", 1)]  # neither retried
    failed_a, failed_b = await record(store, "a"), await record(store, "b")
    assert failed_a.status is DeliveryStatus.FAILED
    assert failed_a.last_error == "PermanentError: pin not found"
    assert failed_b.status is DeliveryStatus.FAILED
    assert failed_b.last_error == "ValueError: bad payload"  # unknown errors are not retried
    assert any("attempt 1: failed: PermanentError: pin not found" in m for m in caplog.messages)


async def test_gives_up_after_max_attempts(store: SQLiteStore, inboxes: list[Inbox]) -> None:
    dispatcher = Recorder(*(TransientError(f"try {n}") for n in range(1, 10)))
    inbox = Inbox(store, dispatcher, max_attempts=3, backoff_base=0.0)
    await run_until_idle(inboxes, inbox, make_delivery("a"))
    assert dispatcher.calls == [("a", 1), ("a", 2), ("a", 3)]
    failed = await record(store, "a")
    assert failed.status is DeliveryStatus.FAILED
    assert failed.last_error == "TransientError: try 3"


async def test_backoff_schedules_the_retry(spy: SpyStore, inboxes: list[Inbox]) -> None:
    dispatcher = Recorder(TransientError("timeout"))
    inbox = Inbox(spy, dispatcher, backoff_base=10.0, clock=lambda: 5000.0, rng=lambda: 0.5)
    inboxes.append(inbox)
    await inbox.start()
    await inbox.submit(make_delivery("a", received_at=5000.0))
    await settle(spy.retried.wait())
    queued = await record(spy, "a")
    assert queued.status is DeliveryStatus.QUEUED
    assert queued.next_attempt_at == 5005.0  # 10 * 2^0 * 0.5
    assert queued.last_error == "TransientError: timeout"


async def test_retry_after_wins_over_backoff(spy: SpyStore, inboxes: list[Inbox]) -> None:
    dispatcher = Recorder(TransientError("rate limited", retry_after=30.0))
    inbox = Inbox(spy, dispatcher, backoff_base=1.0, clock=lambda: 5000.0, rng=lambda: 0.9)
    inboxes.append(inbox)
    await inbox.start()
    await inbox.submit(make_delivery("a", received_at=5000.0))
    await settle(spy.retried.wait())
    assert (await record(spy, "a")).next_attempt_at == 5030.0


async def test_a_pending_retry_is_not_idle(spy: SpyStore, inboxes: list[Inbox]) -> None:
    now = [5000.0]
    dispatcher = Recorder(TransientError("later", retry_after=30.0))
    inbox = Inbox(spy, dispatcher, clock=lambda: now[0])
    inboxes.append(inbox)
    await inbox.start()
    await inbox.submit(make_delivery("a", "A", received_at=5000.0))
    await settle(spy.retried.wait())

    async def statuses_once_idle() -> set[DeliveryStatus]:
        await inbox.wait_idle()
        return {r.status for r in await spy.list_deliveries()}

    early = asyncio.create_task(inbox.wait_idle())
    for _ in range(20):  # let every worker look: "a" waits for its retry, so not idle
        await asyncio.sleep(0)
    assert not early.done()
    early.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await early

    now[0] = 5030.0
    # A new delivery wakes the workers, which now find the retry due as well. (Idle is
    # awaited once it is stored: before that, the inbox is rightly idle after "a".)
    await inbox.submit(make_delivery("b", "B", received_at=5030.0))
    waiter = asyncio.create_task(statuses_once_idle())
    assert await settle(waiter) == {DeliveryStatus.DONE}
    assert sorted(dispatcher.calls) == [("a", 1), ("a", 2), ("b", 1)]


async def test_same_subject_never_overlaps_while_others_run(
    store: SQLiteStore, inboxes: list[Inbox]
) -> None:
    names = ("a1", "a2", "b1")
    started = {name: asyncio.Event() for name in names}
    release = {name: asyncio.Event() for name in names}
    running: Counter[str] = Counter()
    most_at_once: Counter[str] = Counter()
    log: list[tuple[str, str]] = []

    async def dispatch(delivery: Delivery) -> None:
        running[delivery.subject] += 1
        most_at_once[delivery.subject] = max(
            most_at_once[delivery.subject], running[delivery.subject]
        )
        log.append(("start", delivery.delivery_id))
        started[delivery.delivery_id].set()
        await release[delivery.delivery_id].wait()
        log.append(("end", delivery.delivery_id))
        running[delivery.subject] -= 1

    inbox = Inbox(store, dispatch, workers=3)
    inboxes.append(inbox)
    await inbox.start()
    await inbox.submit(make_delivery("a1", "pin:A", received_at=1.0))
    await inbox.submit(make_delivery("a2", "pin:A", received_at=2.0))
    await inbox.submit(make_delivery("b1", "pin:B", received_at=3.0))

    # a1 and b1 run at the same time: neither has been released yet.
    await settle(asyncio.gather(started["a1"].wait(), started["b1"].wait()))
    assert inbox.busy_subjects == frozenset({"pin:A", "pin:B"})
    # b1 is newer than a2, so a worker passed a2 over to claim b1: a2 waits for a1.
    assert not started["a2"].is_set()
    release["b1"].set()
    release["a1"].set()
    await settle(started["a2"].wait())
    release["a2"].set()
    await settle(inbox.wait_idle())

    assert log.index(("end", "a1")) < log.index(("start", "a2"))
    assert most_at_once == Counter({"pin:A": 1, "pin:B": 1})


async def test_stop_leaves_the_interrupted_delivery_running_and_start_recovers_it(
    store: SQLiteStore, inboxes: list[Inbox], caplog: pytest.LogCaptureFixture
) -> None:
    entered = asyncio.Event()
    cancelled: list[str] = []

    async def hang(delivery: Delivery) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(delivery.delivery_id)
            raise

    first = Inbox(store, hang)
    await first.start()
    await first.submit(make_delivery("a"))
    await settle(entered.wait())
    await first.stop()
    assert cancelled == ["a"]
    assert (await record(store, "a")).status is DeliveryStatus.RUNNING

    caplog.set_level(logging.WARNING, logger="bot.service.inbox")
    dispatcher = Recorder()
    await run_until_idle(inboxes, Inbox(store, dispatcher))
    assert dispatcher.calls == [("a", 2)]
    assert (await record(store, "a")).status is DeliveryStatus.DONE
    assert "requeued 1 deliveries interrupted by the previous run" in caplog.messages


async def test_a_delivery_that_keeps_dying_is_given_up(
    store: SQLiteStore, inboxes: list[Inbox]
) -> None:
    await store.enqueue(make_delivery("poison"))
    for _ in range(2):  # two attempts that never finished (the process died)
        assert await store.claim(2000.0, frozenset()) is not None
        await store.requeue_running()
    dispatcher = Recorder()
    await run_until_idle(inboxes, Inbox(store, dispatcher, max_attempts=2))
    assert dispatcher.calls == []
    failed = await record(store, "poison")
    assert failed.status is DeliveryStatus.FAILED
    assert failed.last_error == GAVE_UP.format(attempts=2)


async def test_a_store_error_does_not_kill_the_worker(
    spy: SpyStore, inboxes: list[Inbox], caplog: pytest.LogCaptureFixture
) -> None:
    spy.failing_claims = 1
    dispatcher = Recorder()
    inbox = Inbox(spy, dispatcher, workers=1)
    await run_until_idle(inboxes, inbox, make_delivery("a"))
    assert dispatcher.calls == [("a", 1)]
    assert spy.failing_claims == 0
    assert LOG_WORKER_ERROR % "inbox-worker-0" in caplog.messages


async def test_wait_idle_on_an_empty_store_returns(store: SQLiteStore) -> None:
    await settle(Inbox(store, Recorder()).wait_idle())


async def test_start_twice_is_refused(store: SQLiteStore, inboxes: list[Inbox]) -> None:
    inbox = Inbox(store, Recorder())
    inboxes.append(inbox)
    await inbox.start()
    with pytest.raises(RuntimeError):
        await inbox.start()


@pytest.mark.parametrize("bad", [{"workers": 0}, {"max_attempts": 0}])
def test_invalid_limits_are_refused(store: SQLiteStore, bad: dict[str, int]) -> None:
    factory: Callable[..., Inbox] = Inbox
    with pytest.raises(ValueError, match="at least 1"):
        factory(store, Recorder(), **bad)


class CountingStore(SQLiteStore):
    """Counts claim queries: each one scans the queue, so idle wake-ups are not free."""

    claims = 0

    async def settle_and_claim(
        self,
        settled: Settlement | None,
        now: float,
        busy_subjects: frozenset[str],
        *,
        claim: bool = True,
    ) -> Delivery | None:
        self.claims += claim
        return await super().settle_and_claim(settled, now, busy_subjects, claim=claim)


async def test_a_burst_on_one_subject_does_not_wake_every_worker(
    blocking: BlockingRunner, inboxes: list[Inbox]
) -> None:
    store = CountingStore(":memory:", blocking)
    await store.open()
    gate, started = asyncio.Event(), asyncio.Event()
    seen: list[str] = []

    async def dispatcher(delivery: Delivery) -> None:
        seen.append(delivery.delivery_id)
        started.set()
        await gate.wait()

    inbox = Inbox(store, dispatcher, workers=4)
    inboxes.append(inbox)
    await inbox.start()
    await inbox.submit(make_delivery("d0", "pr:1"))
    await settle(started.wait())  # the first delivery is running; its subject is busy
    for n in range(1, 30):
        await inbox.submit(make_delivery(f"d{n}", "pr:1", received_at=1000.0 + n))
    gate.set()
    await settle(inbox.wait_idle())

    assert seen == [f"d{n}" for n in range(30)]  # in order, one at a time
    # 4 start-up claims, one per delivery, one that finds the queue empty, and a
    # couple of stragglers; the old wake-everyone scheme made about 4 per delivery.
    assert store.claims <= 30 + 4 + 4
    await store.close()


LOST = "connection was closed in the middle of operation"


async def test_an_outage_is_one_line_and_the_workers_back_off(
    spy: SpyStore,
    inboxes: list[Inbox],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO)
    paused: list[int] = []

    def pause(failures: int, rand: float) -> float:
        paused.append(failures)
        return 0.0  # the waits' lengths are bot.store.outage's tests

    monkeypatch.setattr("bot.service.inbox.pause", pause)
    spy.failure = asyncpg.exceptions.ConnectionDoesNotExistError(LOST)
    spy.failing_claims = 6
    dispatcher = Recorder()
    await run_until_idle(inboxes, Inbox(spy, dispatcher, workers=1), make_delivery("a"))

    assert dispatcher.calls == [("a", 1)]
    assert paused == [1, 2, 3, 4, 5, 6]  # one more error in a row each time: a longer pause
    told = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.msg for r in told] == [LOG_UNREACHABLE, LOG_BACK]
    assert all(r.exc_info is None for r in caplog.records)
    assert spy.outage.since is None


async def test_a_database_lost_under_a_handler_retries_the_delivery(
    store: SQLiteStore, inboxes: list[Inbox]
) -> None:
    dispatcher = Recorder(asyncpg.exceptions.ConnectionDoesNotExistError(LOST))
    await run_until_idle(inboxes, Inbox(store, dispatcher, backoff_base=0.0), make_delivery("a"))
    assert dispatcher.calls == [("a", 1), ("a", 2)]
    assert (await record(store, "a")).status is DeliveryStatus.DONE


def _refused() -> PermanentError:
    try:
        hash([])  # what routing an "action" that is a list does
    except TypeError as exc:
        try:
            raise PermanentError("a pull_request delivery whose fields cannot be routed") from exc
        except PermanentError as refusal:
            return refusal
    raise AssertionError("a list is hashable now")


def _carrying(bug: BaseException) -> PermanentError:
    combined = PermanentError("1 handler(s) failed")
    combined.bug = bug
    return combined


async def test_a_refusal_is_one_line_and_a_bug_logs_its_traceback_once(
    store: SQLiteStore, inboxes: list[Inbox], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.service.inbox")
    dispatcher = Recorder(_refused(), ZeroDivisionError("a bug"), _carrying(KeyError("k")))
    deliveries = [make_delivery(name, name) for name in ("refused", "raw-bug", "carried-bug")]
    await run_until_idle(inboxes, Inbox(store, dispatcher, workers=1), *deliveries)

    ends: dict[object, logging.LogRecord] = {}
    for _ in range(1000):  # idle once stored; each line follows its store turn
        ends = {r.args[0]: r for r in caplog.records if r.msg == LOG_OUTCOME}  # type: ignore[index]
        if len(ends) == len(deliveries):
            break
        await asyncio.sleep(0)
    assert ends["refused"].exc_info is None
    assert "cannot be routed" in ends["refused"].getMessage()
    raw, carried = ends["raw-bug"].exc_info, ends["carried-bug"].exc_info
    assert raw is not None
    assert raw[0] is ZeroDivisionError
    assert carried is not None
    assert carried[0] is KeyError
    assert len([r for r in caplog.records if r.exc_info]) == 2
