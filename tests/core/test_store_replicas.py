"""Several replicas on one PostgreSQL database: claims, recovery, wake-ups and locks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest

from bot.core.blocking import BlockingRunner
from bot.store.access import Access, StoreUnavailable
from bot.store.open import migrate_database, store_for
from bot.store.postgres import LOG_PRESENCE_LOST, NOT_A_BOT_DATABASE, PostgresStore, migrate_url
from bot.store.postgres_schema import MIGRATIONS
from bot.store.protocol import DeliveryStatus
from bot.store.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from bot.store.sqlite import SQLiteStore
from sandbox.ports import free_port

from .helpers import make_delivery

SAFETY = 10.0


@pytest.fixture
async def replicas(postgres_url: str) -> AsyncIterator[Callable[[], PostgresStore]]:
    """Make replicas (stores as ``serve`` opens them) on one database; all closed at the end."""
    made: list[PostgresStore] = []

    def make() -> PostgresStore:
        store = PostgresStore(postgres_url, recovery_interval=3600)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()


async def opened(make: Callable[[], PostgresStore]) -> PostgresStore:
    store = make()
    await store.open()
    return store


async def kill_connections_of(url: str, store: PostgresStore) -> None:
    """What a ``kill -9`` of the replica's process does to its sessions: they end."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            store.application_name,
        )
    finally:
        await conn.close()


async def test_one_subject_runs_on_one_replica_at_a_time_in_order(
    replicas: Callable[[], PostgresStore],
) -> None:
    a, b = await opened(replicas), await opened(replicas)
    for n in range(6):
        await a.enqueue(make_delivery(f"d{n}", "pr:1", received_at=float(n)))
    askers = (a, b, a, b)
    claims = await asyncio.gather(*(s.claim(100.0, frozenset()) for s in askers))
    taken = [
        (asker, c.delivery_id) for asker, c in zip(askers, claims, strict=True) if c is not None
    ]
    assert [d for _, d in taken] == ["d0"]  # the subject is busy for everyone else
    await taken[0][0].finish("d0")
    nxt = await asyncio.gather(b.claim(100.0, frozenset()), a.claim(100.0, frozenset()))
    assert [c.delivery_id for c in nxt if c is not None] == ["d1"]


async def test_many_subjects_spread_over_replicas_without_a_double_claim(
    replicas: Callable[[], PostgresStore],
) -> None:
    stores = [await opened(replicas) for _ in range(3)]
    for n in range(30):
        await stores[0].enqueue(make_delivery(f"d{n}", f"pr:{n}", received_at=float(n)))

    async def drain(store: PostgresStore) -> list[str]:
        taken: list[str] = []
        while (claimed := await store.claim(100.0, frozenset())) is not None:
            taken.append(claimed.delivery_id)
            await store.finish(claimed.delivery_id)
        return taken

    results = await asyncio.gather(*(drain(s) for s in stores))
    every = [d for taken in results for d in taken]
    assert sorted(every) == sorted(f"d{n}" for n in range(30))  # each exactly once


async def test_a_dead_replicas_work_is_requeued_and_a_live_ones_is_not(
    postgres_url: str, replicas: Callable[[], PostgresStore]
) -> None:
    dead, live, survivor = [await opened(replicas) for _ in range(3)]
    await survivor.enqueue(make_delivery("x", "X"))
    await survivor.enqueue(make_delivery("y", "Y"))
    assert await dead.claim(2000.0, frozenset()) is not None
    assert await live.claim(2000.0, frozenset()) is not None

    assert await survivor.requeue_running() == 0  # both owners are alive
    await kill_connections_of(postgres_url, dead)
    assert await survivor.requeue_running() == 1

    statuses = {r.delivery.delivery_id: r.status for r in await survivor.list_deliveries(limit=10)}
    assert sorted(statuses.values()) == [DeliveryStatus.QUEUED, DeliveryStatus.RUNNING]


async def test_another_replicas_announcement_rings_the_inbox(
    replicas: Callable[[], PostgresStore],
) -> None:
    a, b = await opened(replicas), await opened(replicas)
    rung = asyncio.Event()
    own = asyncio.Event()
    b.set_wakeup(rung.set)
    a.set_wakeup(own.set)
    await a.enqueue(make_delivery("d", "S"))
    await asyncio.wait_for(rung.wait(), SAFETY)
    assert not own.is_set()  # a replica is not woken by its own announcement


async def test_a_named_lock_is_held_by_one_replica_until_it_stops(
    replicas: Callable[[], PostgresStore],
) -> None:
    a, b = await opened(replicas), await opened(replicas)
    assert await a.try_lock("reconcile")
    assert await a.try_lock("reconcile")  # held: still ours
    assert not await b.try_lock("reconcile")
    assert await b.try_lock("retention")  # another name, another lock
    await a.close()
    assert await b.try_lock("reconcile")


async def test_an_unreachable_server_is_refused_without_its_password() -> None:
    url = f"postgresql://bot:s3cret@127.0.0.1:{free_port()}/bot"
    with pytest.raises(StoreUnavailable) as refused:
        await PostgresStore(url).open()
    assert "s3cret" not in str(refused.value)
    assert "bot:***@127.0.0.1" in str(refused.value)


async def test_a_command_refuses_a_database_without_the_schema(postgres_url: str) -> None:
    with pytest.raises(StoreUnavailable) as refused:
        await PostgresStore(postgres_url, access=Access.READ).open()
    assert str(refused.value) == NOT_A_BOT_DATABASE.format(url=postgres_url)


async def test_a_reader_opens_a_migrated_database_read_only(
    postgres_url: str, replicas: Callable[[], PostgresStore]
) -> None:
    owner = await opened(replicas)
    await owner.enqueue(make_delivery("d", "S"))
    reader = PostgresStore(postgres_url, access=Access.READ)
    await reader.open()
    try:
        found = await reader.get_delivery("d")
        assert found is not None
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            await reader.put_state("k", "v", {})
    finally:
        await reader.close()


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Until ``check`` holds: polling the store's background loop, under a safety bound."""
    async with asyncio.timeout(SAFETY):
        while True:
            if await check():
                return
            await asyncio.sleep(0.01)


async def test_a_replica_that_lost_its_session_rejoins_and_recovers_the_dead(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.store.postgres")
    dead = PostgresStore(postgres_url, recovery_interval=3600)
    watcher = PostgresStore(postgres_url, recovery_interval=0.02)
    await dead.open()
    await watcher.open()
    try:
        await watcher.enqueue(make_delivery("x", "X"))
        assert await dead.claim(2000.0, frozenset()) is not None
        lost = watcher._presence
        assert lost is not None
        await kill_connections_of(postgres_url, dead)
        conn = await asyncpg.connect(postgres_url)
        try:  # the watcher's own session dies too (a network blip): it must rejoin
            await conn.execute("SELECT pg_terminate_backend($1)", lost.get_server_pid())
        finally:
            await conn.close()

        async def rejoined() -> bool:
            presence = watcher._presence
            return presence is not None and presence is not lost and not presence.is_closed()

        async def requeued() -> bool:
            found = await watcher.get_delivery("x")
            return found is not None and found.status is DeliveryStatus.QUEUED

        await until(rejoined)
        await until(requeued)  # the loop's next pass re-queues the dead one's work
    finally:
        await watcher.close()
        await dead.close()
    assert LOG_PRESENCE_LOST in caplog.messages


async def test_migrate_and_store_for_name_the_backend(postgres_url: str, tmp_path: Path) -> None:
    blocking = BlockingRunner(max_workers=1)
    try:
        assert await migrate_database(postgres_url, blocking) == len(MIGRATIONS)
        assert await migrate_database(postgres_url, blocking) == len(MIGRATIONS)  # idempotent
        sqlite_file = str(tmp_path / "bot.sqlite3")
        assert await migrate_database(sqlite_file, blocking) == len(SQLITE_MIGRATIONS)
        assert isinstance(store_for(postgres_url, blocking), PostgresStore)
        assert isinstance(store_for(sqlite_file, blocking, serve=True), SQLiteStore)
    finally:
        blocking.close()
    with pytest.raises(StoreUnavailable):
        await migrate_url(f"postgresql://bot@127.0.0.1:{free_port()}/bot")
