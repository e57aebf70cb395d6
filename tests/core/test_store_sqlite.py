from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.core.blocking import BlockingRunner
from bot.store import sqlite as store_sqlite
from bot.store.protocol import DeliveryStatus
from bot.store.sqlite import MIGRATIONS, STORE_NOT_OPEN, SQLiteStore, split_statements

from .helpers import make_delivery


async def test_closed_store_refuses_calls(blocking: BlockingRunner) -> None:
    store = SQLiteStore(":memory:", blocking)
    with pytest.raises(RuntimeError, match=STORE_NOT_OPEN):
        await store.next_due()
    await store.open()
    await store.close()
    await store.close()  # closing twice is harmless
    with pytest.raises(RuntimeError, match=STORE_NOT_OPEN):
        await store.enqueue(make_delivery("d"))


async def test_file_store_survives_reopen_and_migrates_once(
    tmp_path: Path, blocking: BlockingRunner
) -> None:
    path = str(tmp_path / "bot.sqlite3")
    first = SQLiteStore(path, blocking)
    await first.open()
    await first.enqueue(make_delivery("d", received_at=3.0))
    await first.put_state("bump", "p", {"pr": 1})
    await first.close()

    second = SQLiteStore(path, blocking)
    await second.open()  # migrations must not run again (CREATE TABLE would fail)
    record = await second.get_delivery("d")
    assert record is not None
    assert record.status is DeliveryStatus.QUEUED
    assert await second.get_state("bump", "p") == {"pr": 1}
    assert not await second.enqueue(make_delivery("d"))
    await second.close()

    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_split_statements_keeps_semicolons_inside_strings() -> None:
    script = "CREATE TABLE t (x TEXT DEFAULT ';');\n INSERT INTO t VALUES ('a;b');\n\n"
    assert split_statements(script) == [
        "CREATE TABLE t (x TEXT DEFAULT ';');",
        "INSERT INTO t VALUES ('a;b');",
    ]
    assert split_statements("SELECT 1") == ["SELECT 1;"]
    assert split_statements(" ;\n; ") == []


async def test_a_new_migration_is_applied_on_reopen(
    tmp_path: Path, blocking: BlockingRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "bot.sqlite3")
    store = SQLiteStore(path, blocking)
    await store.open()
    await store.enqueue(make_delivery("kept"))
    await store.close()

    added = "CREATE TABLE extra (x INTEGER); INSERT INTO extra VALUES (42);"
    monkeypatch.setattr(store_sqlite, "MIGRATIONS", (*MIGRATIONS, added))
    for _ in range(2):  # the second open must not apply it again
        store = SQLiteStore(path, blocking)
        await store.open()
        assert await store.get_delivery("kept") is not None
        await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (
            len(MIGRATIONS) + 1,
        )
        assert conn.execute("SELECT x FROM extra").fetchall() == [(42,)]


async def test_a_failing_migration_rolls_back(
    tmp_path: Path, blocking: BlockingRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "bot.sqlite3")
    broken = "CREATE TABLE half (x INTEGER); INSERT INTO no_such_table VALUES (1);"
    monkeypatch.setattr(store_sqlite, "MIGRATIONS", (*MIGRATIONS, broken))
    with pytest.raises(sqlite3.OperationalError):
        await SQLiteStore(path, blocking).open()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (len(MIGRATIONS),)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "half" not in tables
