"""One writer per database: a second service on the same SQLite file refuses to open it.

``flock`` belongs to an open file description, so two stores in one process,
each opening the lock file itself, exclude each other just as two processes
would (the subprocess version is in ``tests/cli/test_single_writer_serve.py``).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

import pytest
from aiohttp import web

from bot.core.blocking import BlockingRunner
from bot.service.app import create_app
from bot.store.access import Access, StoreUnavailable
from bot.store.protocol import DeliveryStatus
from bot.store.sqlite import DATABASE_IN_USE, SINGLE_WRITER_NEEDS_OWNER, DatabaseInUse, SQLiteStore

from .helpers import make_delivery
from .service import SAFETY, Handlers, push_body, running_service, settings_for


def writer(path: Path, blocking: BlockingRunner) -> SQLiteStore:
    return SQLiteStore(str(path), blocking, single_writer=True)


async def test_a_second_writer_is_refused_until_the_first_closes(
    tmp_path: Path, blocking: BlockingRunner
) -> None:
    path = tmp_path / "bot.sqlite3"
    first, second = writer(path, blocking), writer(path, blocking)
    await first.open()
    try:
        with pytest.raises(DatabaseInUse) as refused:
            await second.open()
        assert str(refused.value) == DATABASE_IN_USE.format(database=path, lock=f"{path}.lock")
        assert await first.enqueue(make_delivery("d"))  # the first is unaffected
    finally:
        await first.close()
    await second.open()  # released on close
    try:
        assert await second.get_delivery("d") is not None
    finally:
        await second.close()


async def test_readers_and_unlocked_stores_do_not_need_the_lock(
    tmp_path: Path, blocking: BlockingRunner
) -> None:
    path = tmp_path / "bot.sqlite3"
    owner = writer(path, blocking)
    await owner.open()
    try:
        await owner.enqueue(make_delivery("d"))
        for access in (Access.READ, Access.WRITE):
            other = SQLiteStore(str(path), blocking, access=access)
            await other.open()
            try:
                assert await other.get_delivery("d") is not None
            finally:
                await other.close()
    finally:
        await owner.close()


async def test_a_failed_connect_releases_the_lock(tmp_path: Path, blocking: BlockingRunner) -> None:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        await writer(directory, blocking).open()
    # The lock taken before the failed connect is free again.
    other = writer(directory, blocking)
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        await other.open()


def test_an_in_memory_database_has_no_lock_file(
    tmp_path: Path, blocking: BlockingRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    async def open_and_close() -> None:
        store = SQLiteStore(":memory:", blocking, single_writer=True)
        await store.open()
        await store.close()

    asyncio.run(open_and_close())
    assert list(tmp_path.iterdir()) == []


async def test_an_unwritable_lock_file_is_a_clear_error(
    tmp_path: Path, blocking: BlockingRunner
) -> None:
    path = tmp_path / "no-such-directory" / "bot.sqlite3"
    with pytest.raises(StoreUnavailable, match=re.escape(f"cannot open {path}.lock: ")):
        await writer(path, blocking).open()


def test_only_the_owner_takes_the_lock(blocking: BlockingRunner) -> None:
    with pytest.raises(ValueError, match=SINGLE_WRITER_NEEDS_OWNER):
        SQLiteStore("x.sqlite3", blocking, access=Access.READ, single_writer=True)


async def test_a_second_service_stops_before_requeueing_the_first_ones_running_work(
    tmp_path: Path,
) -> None:
    """The bug this prevents: the second start-up re-queued the first one's running
    delivery, and both processes ran it."""
    path = tmp_path / "bot.sqlite3"
    handlers = Handlers()
    handlers.gate = asyncio.Event()
    handlers.broken = False
    async with running_service(path, [handlers.router]) as service:
        await service.post("d-1", push_body())
        await asyncio.wait_for(handlers.started.wait(), SAFETY)

        second = web.AppRunner(create_app(settings_for(path), routers=[handlers.router]))
        with pytest.raises(DatabaseInUse):
            await second.setup()
        await second.cleanup()

        record = await service.record("d-1")
        assert (record.status, record.delivery.attempts) == (DeliveryStatus.RUNNING, 1)
        handlers.gate.set()
        await service.settle()
        assert (await service.record("d-1")).status is DeliveryStatus.DONE
    assert handlers.calls["fragile"] == 1
