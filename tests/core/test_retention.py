"""Retention: what ``Store.prune`` deletes and keeps, the task, and the file size."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.core.blocking import BlockingRunner
from bot.core.settings import Settings
from bot.service.app import create_app
from bot.store import sqlite as store_sqlite
from bot.store.kinds import LEGACY_KINDS, PRUNABLE, Kind
from bot.store.protocol import PruneCounts, Store
from bot.store.retention import DAY, PRUNABLE_KINDS, prune_forever, prune_once
from bot.store.sqlite import MIGRATIONS, SQLiteStore
from tests.conftest import backend_store

from .helpers import make_delivery
from .test_settings import PEM, SECRET, minimal_env, problems_of

ROOT = Path(__file__).resolve().parents[2]

# Kinds that describe something alive, never pruned: a pin's bump state, its
# pause, a repository's config and default branch, the dashboards, the
# stale-allowlist PR, landings (per PR and per pin), wheel audits.
LIVE_KINDS = tuple(sorted(str(kind) for kind in Kind if kind not in PRUNABLE))
RECORD_KINDS = tuple(sorted(PRUNABLE_KINDS))
STATE_CALL_WITH_A_LITERAL = re.compile(r"_state\(\s*[\"']")


def sources() -> list[Path]:
    return [p for folder in ("bot", "handlers") for p in (ROOT / folder).rglob("*.py")]


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(1000.0)


@pytest.fixture
async def sqlite_timed(blocking: BlockingRunner, clock: Clock) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(":memory:", blocking, clock=clock)
    await store.open()
    yield store
    await store.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def timed_store(clock: Clock, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """A store on the test's clock; retention means the same on both backends."""
    async with backend_store(request.param, request, clock) as store:
        yield store


def query(path: str, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


async def statuses(store: Store) -> dict[str, str]:
    return {r.delivery.delivery_id: r.status.value for r in await store.list_deliveries()}


# -- the list of prunable kinds ---------------------------------------------------------


def test_every_state_kind_is_one_of_the_registry() -> None:
    # Kinds are members of bot.store.kinds.Kind, never string literals at a call site.
    literal = [str(p) for p in sources() if STATE_CALL_WITH_A_LITERAL.search(p.read_text())]
    assert literal == []
    assert len({kind.value for kind in Kind}) == len(Kind)  # @unique: no kind shared


def test_prunable_kinds_are_the_registrys_records() -> None:
    assert {str(kind) for kind in PRUNABLE} == PRUNABLE_KINDS
    live = {Kind.BUMP, Kind.CONFIG, Kind.PAUSE, Kind.PIN_COOLDOWN, Kind.LANDING, Kind.DASHBOARD}
    assert not live & set(PRUNABLE)
    assert set(PRUNABLE) >= LEGACY_KINDS
    assert all(reason for reason in PRUNABLE.values())


# -- deliveries ------------------------------------------------------------------------


async def test_queued_and_running_deliveries_are_never_pruned(
    timed_store: Store, clock: Clock
) -> None:
    store = timed_store
    for name in ("queued", "running", "retrying", "done", "failed"):
        await store.enqueue(make_delivery(name, name, received_at=0.0))
    claimed = await store.claim(clock(), frozenset({"queued", "retrying", "done", "failed"}))
    assert claimed is not None
    assert claimed.delivery_id == "running"
    await store.retry_later("retrying", 5.0, "503")
    await store.finish("done")
    await store.fail("failed", "404")

    clock.now += 365 * DAY
    counts = await store.prune(clock.now, PRUNABLE_KINDS)
    assert (counts.deliveries, counts.states) == (2, 0)
    assert await statuses(store) == {
        "queued": "queued",
        "running": "running",
        "retrying": "queued",
    }


async def test_deliveries_age_from_when_they_finished(timed_store: Store, clock: Clock) -> None:
    store = timed_store
    await store.enqueue(make_delivery("old", "a", received_at=0.0))
    await store.enqueue(make_delivery("late", "b", received_at=0.0))
    await store.finish("old")  # at 1000
    clock.now = 5000.0
    await store.retry_later("late", 5000.0, "timeout")
    await store.finish("late")  # at 5000, though received at 0 like "old"

    assert await store.prune(1000.0, ()) == PruneCounts(batches=1)  # strictly older only
    assert (await store.prune(4999.0, ())).deliveries == 1
    assert set(await statuses(store)) == {"late"}
    assert (await store.prune(5001.0, ())).deliveries == 1
    assert await statuses(store) == {}


async def test_handler_runs_go_with_their_deliveries(
    tmp_path: Path, blocking: BlockingRunner, clock: Clock
) -> None:
    path = str(tmp_path / "bot.sqlite3")
    store = SQLiteStore(path, blocking, clock=clock)
    await store.open()
    for name in ("done", "open"):
        await store.enqueue(make_delivery(name, name))
        await store.mark_handler_done(name, "bump")
        await store.mark_handler_done(name, "landing")
    await store.finish("done")
    counts = await store.prune(clock.now + 1.0, ())
    assert (counts.deliveries, counts.handler_runs) == (1, 2)
    assert await store.handlers_done("open") == {"bump", "landing"}
    await store.close()
    rows = query(path, "SELECT delivery_id, handler FROM handler_runs ORDER BY 2")
    assert rows == [("open", "bump"), ("open", "landing")]  # no orphans left behind


async def test_a_pruned_delivery_id_is_accepted_again(timed_store: Store, clock: Clock) -> None:
    # The documented trade-off: a redelivery older than the retention age runs again.
    await timed_store.enqueue(make_delivery("d"))
    await timed_store.finish("d")
    assert not await timed_store.enqueue(make_delivery("d"))
    await timed_store.prune(clock.now + 1.0, ())
    assert await timed_store.enqueue(make_delivery("d"))


# -- state documents ---------------------------------------------------------------------


async def test_only_prunable_kinds_are_pruned(timed_store: Store, clock: Clock) -> None:
    store = timed_store
    for kind in (*LIVE_KINDS, *RECORD_KINDS):
        await store.put_state(kind, "o/r#1", {"kind": kind})
    clock.now += 365 * DAY
    counts = await prune_once(store, 30.0, clock)
    assert counts.states == len(RECORD_KINDS)
    for kind in LIVE_KINDS:
        assert await store.get_state(kind, "o/r#1") == {"kind": kind}, kind
    for kind in RECORD_KINDS:
        assert await store.get_state(kind, "o/r#1") is None, kind


async def test_prunable_documents_age_from_their_last_write(
    timed_store: Store, clock: Clock
) -> None:
    store = timed_store
    await store.put_state("retry-pr", "quiet", {"rows": []})
    await store.put_state("retry-pr", "busy", {"rows": []})
    await store.put_state("retry-command", "new", {"outcome": "ok"})
    clock.now += 20 * DAY
    await store.put_state("retry-pr", "busy", {"rows": [1]})  # rewritten: younger now
    clock.now += 15 * DAY
    await store.put_state("retry-command", "newer", {"outcome": "ok"})

    counts = await prune_once(store, 30.0, clock)  # cutoff: 30 days before now
    assert counts.states == 2
    assert [key for key, _ in await store.list_state("retry-pr")] == ["busy"]
    assert [key for key, _ in await store.list_state("retry-command")] == ["newer"]


# -- batches ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deliveries", "documents", "batches"),
    [(7, 5, 3 + 2), (6, 3, 3 + 2), (0, 0, 1 + 1), (2, 4, 1 + 2)],
)
async def test_batches_loop_until_nothing_is_left(
    sqlite_timed: SQLiteStore,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    deliveries: int,
    documents: int,
    batches: int,
) -> None:
    store = sqlite_timed  # counts the SQLite store's transactions
    for n in range(deliveries):
        await store.enqueue(make_delivery(f"d{n}", f"s{n}"))
        await store.finish(f"d{n}")
    await store.enqueue(make_delivery("open", "open"))
    for n in range(documents):
        await store.put_state("posted-comment", f"k{n}", {})
    await store.put_state("bump", "pin", {})
    calls: list[str] = []
    real_run = store._run

    async def counting_run(fn: object, /, *args: object) -> object:
        calls.append(getattr(fn, "__name__", "?"))
        return await real_run(fn, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_run", counting_run)
    counts = await store.prune(clock.now + 1.0, PRUNABLE_KINDS, batch_size=3)
    assert counts == PruneCounts(deliveries, 0, documents, batches)
    assert len(calls) == batches  # one transaction (and one lock hold) per batch
    assert set(await statuses(store)) == {"open"}
    assert await store.list_state("posted-comment") == []
    assert await store.get_state("bump", "pin") == {}


async def test_batch_size_must_be_positive(timed_store: Store) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        await timed_store.prune(0.0, (), batch_size=0)


# -- the migration ---------------------------------------------------------------------


async def test_the_migration_dates_existing_rows(
    tmp_path: Path, blocking: BlockingRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "bot.sqlite3")
    monkeypatch.setattr(store_sqlite, "MIGRATIONS", MIGRATIONS[:2])
    conn = sqlite3.connect(path, isolation_level=None)  # a file of the previous version
    store_sqlite.migrate(conn)
    conn.executemany(
        "INSERT INTO deliveries (delivery_id, source, event, payload, subject, received_at,"
        " status, next_attempt_at) VALUES (?, 'github', 'push', x'7b7d', ?, 100.0, ?, 100.0)",
        [(status, status, status) for status in ("done", "failed", "queued")],
    )
    conn.execute("INSERT INTO state (kind, key, value) VALUES ('retry-command', 'k', '{}')")
    conn.close()
    monkeypatch.setattr(store_sqlite, "MIGRATIONS", MIGRATIONS)

    upgraded = SQLiteStore(path, blocking, clock=lambda: 10 * DAY)
    await upgraded.open()
    # Finished before the migration: aged from arrival. Documents: from the migration.
    assert (await upgraded.prune(101.0, PRUNABLE_KINDS)).deliveries == 2
    assert await statuses(upgraded) == {"queued": "queued"}
    assert (await upgraded.prune(10 * DAY, PRUNABLE_KINDS)).states == 0
    await upgraded.close()
    [(updated_at,)] = query(path, "SELECT updated_at FROM state")
    assert abs(updated_at - time.time()) < 60.0
    assert query(path, "SELECT finished_at FROM deliveries") == [(None,)]


# -- the task ------------------------------------------------------------------------------


async def test_prune_once_logs_one_line_with_the_counts(
    timed_store: Store, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.store.retention")
    await timed_store.enqueue(make_delivery("d"))
    await timed_store.mark_handler_done("d", "h")
    await timed_store.finish("d")
    await timed_store.put_state("retry-job", "1", {})
    clock.now += 31 * DAY
    await prune_once(timed_store, 30.0, clock)
    assert [r.getMessage() for r in caplog.records] == [
        "retention: pruned 1 deliveries, 1 handler runs and 1 state documents"
        " older than 30 days in 2 batches"
    ]
    assert caplog.records[0].levelno == logging.INFO


async def test_prune_forever_keeps_going_after_a_failure(
    timed_store: Store,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    real_prune = timed_store.prune
    outcomes = iter([OSError("disk I/O error"), None, None])

    async def flaky_prune(*args: object, **kwargs: object) -> PruneCounts:
        error = next(outcomes)
        if error is not None:
            raise error
        return await real_prune(*args, **kwargs)  # type: ignore[arg-type]

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            raise asyncio.CancelledError

    monkeypatch.setattr(timed_store, "prune", flaky_prune)
    with pytest.raises(asyncio.CancelledError):
        await prune_forever(timed_store, 30.0, clock, interval=60.0, sleep=sleep)
    assert waits == [60.0, 60.0, 60.0]
    assert "retention: pruning failed" in caplog.text


async def test_the_app_prunes_at_start_and_stops_the_task(
    tmp_path: Path, blocking: BlockingRunner
) -> None:
    path = str(tmp_path / "bot.sqlite3")
    store = SQLiteStore(path, blocking, clock=lambda: 0.0)
    await store.open()
    await store.enqueue(make_delivery("old", received_at=0.0))
    await store.finish("old")
    await store.put_state("posted-comment", "o/r#1", {"pr": 1})
    await store.put_state("bump", "o/r#pin", {})
    await store.close()

    settings = Settings(
        webhook_secret=SECRET,
        app_id="1",
        private_key=PEM,
        repositories=(),
        database=path,
        reconcile_interval=0.0,
    )
    runner = web.AppRunner(create_app(settings, clock=lambda: 31 * DAY))
    await runner.setup()
    try:
        task = next(t for t in asyncio.all_tasks() if t.get_name() == "retention")
        for _ in range(500):  # the first prune runs in the background, right away
            # Deliveries and documents are pruned in separate batches: wait for both.
            pruned = query(path, "SELECT COUNT(*) FROM deliveries") == [(0,)]
            if pruned and query(path, "SELECT kind FROM state") == [("bump",)]:
                break
            await asyncio.sleep(0.01)
    finally:
        await runner.cleanup()
    assert task.done()
    assert query(path, "SELECT COUNT(*) FROM deliveries") == [(0,)]
    assert query(path, "SELECT kind FROM state") == [("bump",)]


# -- settings ---------------------------------------------------------------------------


def test_retention_days_default_and_value() -> None:
    assert Settings.from_env(minimal_env()).retention_days == 30.0
    env = minimal_env(FOLLOWUP_BOT_RETENTION_DAYS=" 7.5 ")
    assert Settings.from_env(env).retention_days == 7.5


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "'0' is not a finite number above 0"),
        ("-3", "'-3' is not a finite number above 0"),
        ("inf", "'inf' is not a finite number above 0"),
        ("nan", "'nan' is not a finite number above 0"),
        ("thirty", "'thirty' is not a number"),
    ],
)
def test_retention_days_must_be_a_positive_number(value: str, problem: str) -> None:
    env = minimal_env(FOLLOWUP_BOT_RETENTION_DAYS=value, FOLLOWUP_BOT_WORKERS="0")
    assert problems_of(env) == (
        f"FOLLOWUP_BOT_RETENTION_DAYS: {problem}",
        "FOLLOWUP_BOT_WORKERS: 0 is outside 1..64",  # reported together with the others
    )


# -- the file size under a steady load ------------------------------------------------------

PAYLOAD_BYTES = 13_000
PER_DAY = 8
SIMULATED_DAYS = 90
RETENTION_DAYS = 30
PAYLOAD = {"pad": "x" * PAYLOAD_BYTES}


async def test_database_size_stays_bounded_under_a_steady_load(
    tmp_path: Path, blocking: BlockingRunner
) -> None:
    clock = Clock(0.0)
    path = tmp_path / "bot.sqlite3"
    store = SQLiteStore(str(path), blocking, clock=clock)
    await store.open()
    pages: dict[int, store_sqlite.PageCounts] = {}
    for day in range(1, SIMULATED_DAYS + 1):
        clock.now = day * DAY
        batch = [
            make_delivery(f"{day}-{n}", f"s{n}", received_at=clock.now, payload=PAYLOAD)
            for n in range(PER_DAY)
        ]
        assert all(await asyncio.gather(*(store.enqueue(d) for d in batch)))  # one commit
        for delivery in batch:
            await store.mark_handler_done(delivery.delivery_id, "bump")
            await store.finish(delivery.delivery_id)
        await store.put_state("posted-comment", f"o/r#{day}", {"pr": day})
        await store.put_state("retry-job", str(day), {"repo": "o/r", "outcome": "passed"})
        await store.put_state("bump", f"o/r#pin{day % 3}", {"head": str(day)})  # live
        clock.now += DAY / 2
        await prune_once(store, RETENTION_DAYS, clock)
        pages[day] = await store.page_counts()
    await store.close()  # checkpoints the WAL into the file

    window = RETENTION_DAYS + 5
    print(
        "pages (total/free/used) on days 10, 30, 31, 35, 60, 90:",
        *(f"{pages[d].total}/{pages[d].free}/{pages[d].used}" for d in (10, 30, 31, 35, 60, 90)),
    )
    last = pages[SIMULATED_DAYS]
    assert path.stat().st_size == last.total * last.page_size
    # What is kept levels off once a full window is kept...
    for day in range(60, SIMULATED_DAYS + 1):
        assert abs(pages[day].used - pages[window].used) <= pages[window].used * 0.05, day
    # ... and the file stops growing: freed pages are reused, not appended.
    assert max(pages[d].total for d in pages if d >= window) <= pages[window].total * 1.02
    assert pages[SIMULATED_DAYS].total < pages[10].total * (RETENTION_DAYS + 3) / 10
    # Without pruning it would hold 90 days of payloads; it holds about 30.
    kept_bytes = pages[SIMULATED_DAYS].used * pages[SIMULATED_DAYS].page_size
    assert kept_bytes < (RETENTION_DAYS + 2) * PER_DAY * PAYLOAD_BYTES * 1.3
