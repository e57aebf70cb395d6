"""``followup-bot deliveries list|show|replay`` against a real SQLite file."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.deliveries import (
    HANDLERS_FORGOTTEN,
    HANDLERS_SKIPPED,
    NO_FAILED,
    NO_SUCH_DELIVERY,
    NOTHING_LISTED,
    REFUSE_DONE,
    REFUSE_PENDING,
    REPLAYED,
    Shown,
    format_show,
    timestamp,
)
from bot.cli.main import main
from bot.cli.store_access import DATABASE_ERROR
from bot.core.blocking import BlockingRunner
from bot.store.protocol import DeliveryRecord, DeliveryStatus
from bot.store.sqlite import (
    MIGRATIONS,
    NO_DATABASE,
    NOT_A_BOT_DATABASE,
    SCHEMA_MISMATCH,
    SQLiteStore,
)
from tests.core.helpers import make_delivery

T0 = 1_700_000_000.0
ERROR = "PermanentError: 1 handler(s) failed: boom\nthe second line of it"
STEADY = "handlers.steady"


async def _fill(path: Path) -> None:
    blocking = BlockingRunner(1)
    store = SQLiteStore(str(path), blocking)
    await store.open()
    try:
        for n, (name, subject) in enumerate(
            [("d-done", "a"), ("d-failed", "b"), ("d-running", "c"), ("d-queued", "d")], start=1
        ):
            await store.enqueue(make_delivery(name, subject, received_at=T0 + n))
        for _ in range(3):  # oldest first: done, failed, running; d-queued is not due yet
            assert await store.claim(T0 + 3.5, frozenset()) is not None
        await store.mark_handler_done("d-done", "h1")
        await store.finish("d-done")
        await store.mark_handler_done("d-failed", STEADY)
        await store.fail("d-failed", ERROR)
    finally:
        await store.close()
        blocking.close()


async def _read(path: Path, delivery_id: str) -> tuple[DeliveryRecord, frozenset[str]]:
    blocking = BlockingRunner(1)
    store = SQLiteStore(str(path), blocking)
    await store.open()
    try:
        record = await store.get_delivery(delivery_id)
        assert record is not None
        return record, await store.handlers_done(delivery_id)
    finally:
        await store.close()
        blocking.close()


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "bot.sqlite3"
    asyncio.run(_fill(path))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["deliveries", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def fields(text: str) -> dict[str, str]:
    """``name: value`` lines of ``show`` (continuation lines start with a space)."""
    pairs = [line.split(":", 1) for line in text.splitlines() if line and line[0] != " "]
    return {name: value.strip() for name, value in pairs}


# -- list ---------------------------------------------------------------------------------


def test_list_shows_the_newest_first_one_line_each(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "list", "--database", str(database))
    assert (code, err) == (0, "")
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["ID", "STATUS", "ATTEMPTS"]
    assert [row.split()[:3] for row in rows] == [
        ["d-queued", "queued", "0"],
        ["d-running", "running", "1"],
        ["d-failed", "failed", "1"],
        ["d-done", "done", "1"],
    ]
    failed = rows[2]
    assert timestamp(T0 + 2) in failed
    assert "PermanentError: 1 handler(s) failed: boom" in failed
    assert "second line" not in out  # one line per delivery


def test_list_failed_and_limit(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--failed", "--database", str(database))
    assert code == 0
    assert [row.split()[0] for row in out.splitlines()[1:]] == ["d-failed"]
    code, out, _ = run(capsys, "list", "--limit", "2", "--database", str(database))
    assert [row.split()[0] for row in out.splitlines()[1:]] == ["d-queued", "d-running"]


def test_list_json(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--json", "--database", str(database))
    assert code == 0
    documents = json.loads(out)
    assert [d["id"] for d in documents] == ["d-queued", "d-running", "d-failed", "d-done"]
    assert documents[2] == {
        "id": "d-failed",
        "status": "failed",
        "source": "github",
        "event": "push",
        "subject": "b",
        "attempts": 1,
        "received_at": timestamp(T0 + 2),
        "next_attempt_at": None,
        "last_error": ERROR,
        "payload_bytes": len(make_delivery("d-failed").payload),
    }
    assert documents[0]["next_attempt_at"] == timestamp(T0 + 4)


def test_list_of_an_empty_inbox(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.sqlite3"

    async def create() -> None:
        blocking = BlockingRunner(1)
        store = SQLiteStore(str(path), blocking)
        await store.open()
        await store.close()
        blocking.close()

    asyncio.run(create())
    assert run(capsys, "list", "--database", str(path)) == (0, NOTHING_LISTED + "\n", "")
    assert run(capsys, "list", "--failed", "--database", str(path)) == (0, NO_FAILED + "\n", "")
    assert json.loads(run(capsys, "list", "--json", "--database", str(path))[1]) == []


def test_the_database_comes_from_the_environment(
    database: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOLLOWUP_BOT_DATABASE", str(database))
    code, out, _ = run(capsys, "list", "--failed")
    assert code == 0
    assert "d-failed" in out


# -- show ---------------------------------------------------------------------------------


def test_show_a_failed_delivery(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show", "d-failed", "--database", str(database))
    assert (code, err) == (0, "")
    assert fields(out) == {
        "id": "d-failed",
        "status": "failed",
        "source": "github",
        "event": "push",
        "subject": "b",
        "attempts": "1",
        "received": timestamp(T0 + 2),
        "last error": ERROR.splitlines()[0],
        "handlers done": STEADY,
        "payload": f"{len(make_delivery('d-failed').payload)} bytes",
    }
    assert "  the second line of it" in out  # the whole error, in its column
    assert make_delivery("d-failed").payload.decode() not in out


def test_show_says_1_byte_not_1_bytes() -> None:
    delivery = dataclasses.replace(make_delivery("d-one"), payload=b"1")
    record = DeliveryRecord(
        delivery=delivery, status=DeliveryStatus.DONE, next_attempt_at=0.0, last_error=None
    )
    text = format_show(Shown(record=record, handlers_done=frozenset()), payload=False)
    assert fields(text)["payload"] == "1 byte"


def test_show_with_the_payload(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    payload = make_delivery("d-queued").payload.decode()
    code, out, _ = run(capsys, "show", "d-queued", "--payload", "--database", str(database))
    assert code == 0
    assert out.endswith("\n\n" + payload + "\n")
    assert fields(out.split("\n\n")[0])["next attempt"] == timestamp(T0 + 4)
    assert fields(out.split("\n\n")[0])["handlers done"] == "none"

    code, out, _ = run(capsys, "show", "d-done", "--json", "--payload", "--database", str(database))
    document = json.loads(out)
    assert (document["status"], document["handlers_done"]) == ("done", ["h1"])
    assert document["payload"] == make_delivery("d-done").payload.decode()


def test_show_an_unknown_id_exits_2(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    message = NO_SUCH_DELIVERY.format(id="nope", path=database)
    assert run(capsys, "show", "nope", "--database", str(database)) == (
        2,
        "",
        f"error: {message}\n",
    )


# -- replay -------------------------------------------------------------------------------


def test_replay_requeues_a_failed_delivery_keeping_its_completed_handlers(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "replay", "d-failed", "--database", str(database))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        REPLAYED.format(id="d-failed", previous="failed"),
        HANDLERS_SKIPPED.format(names=STEADY),
    ]
    record, done = asyncio.run(_read(database, "d-failed"))
    assert (record.status, record.delivery.attempts) == (DeliveryStatus.QUEUED, 0)
    assert done == frozenset({STEADY})
    # Queued now: a second replay is refused.
    code, _, err = run(capsys, "replay", "d-failed", "--database", str(database))
    assert code == 2
    assert REFUSE_PENDING.format(id="d-failed", status="queued") in err


@pytest.mark.parametrize(
    ("delivery_id", "status"), [("d-queued", "queued"), ("d-running", "running")]
)
def test_replay_refuses_a_queued_or_running_delivery(
    database: Path, capsys: pytest.CaptureFixture[str], delivery_id: str, status: str
) -> None:
    message = REFUSE_PENDING.format(id=delivery_id, status=status)
    assert run(capsys, "replay", delivery_id, "--database", str(database)) == (
        2,
        "",
        f"error: {message}\n",
    )
    assert run(capsys, "replay", delivery_id, "--force", "--database", str(database))[0] == 2
    record, _ = asyncio.run(_read(database, delivery_id))
    assert record.status.value == status


def test_replay_of_a_done_delivery_needs_force(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = REFUSE_DONE.format(id="d-done")
    assert run(capsys, "replay", "d-done", "--database", str(database)) == (
        2,
        "",
        f"error: {message}\n",
    )
    code, out, _ = run(capsys, "replay", "d-done", "--force", "--database", str(database))
    assert code == 0
    assert out.splitlines() == [
        REPLAYED.format(id="d-done", previous="done"),
        HANDLERS_FORGOTTEN.format(count=1),
    ]
    record, done = asyncio.run(_read(database, "d-done"))
    assert (record.status, done) == (DeliveryStatus.QUEUED, frozenset())


def test_replay_refuses_an_unknown_id(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    message = NO_SUCH_DELIVERY.format(id="nope", path=database)
    assert run(capsys, "replay", "nope", "--database", str(database)) == (
        2,
        "",
        f"error: {message}\n",
    )


async def test_list_and_replay_work_while_a_service_holds_the_database(database: Path) -> None:
    blocking = BlockingRunner(1)
    service = SQLiteStore(str(database), blocking, single_writer=True)
    await service.open()
    try:
        listing = ["deliveries", "list", "--database", str(database)]
        replay = ["deliveries", "replay", "d-failed", "--database", str(database)]
        assert await asyncio.to_thread(main, listing) == 0
        assert await asyncio.to_thread(main, replay) == 0
        record = await service.get_delivery("d-failed")
        assert record is not None
        assert record.status is DeliveryStatus.QUEUED
    finally:
        await service.close()
        blocking.close()


def test_a_database_error_is_one_line_too(
    database: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def busy(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(SQLiteStore, "requeue", busy)
    message = DATABASE_ERROR.format(path=database, error="database is locked")
    assert run(capsys, "replay", "d-failed", "--database", str(database)) == (
        2,
        "",
        f"error: {message}\n",
    )


# -- databases that are not there, or not the bot's -------------------------------------------

COMMANDS = [["list"], ["show", "d-1"], ["replay", "d-1"]]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_database_is_one_error_line_and_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    path = tmp_path / "typo.sqlite3"
    message = NO_DATABASE.format(path=path)
    assert run(capsys, *command, "--database", str(path)) == (2, "", f"error: {message}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def foreign(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "other.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()
    yield path
    with sqlite3.connect(path) as conn:  # untouched: no table of the bot's was created
        tables = conn.execute("SELECT name FROM sqlite_master").fetchall()
    conn.close()
    assert tables == [("notes",)]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_database_that_is_not_the_bots_is_refused(
    foreign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    message = NOT_A_BOT_DATABASE.format(path=foreign)
    assert run(capsys, *command, "--database", str(foreign)) == (2, "", f"error: {message}\n")
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all\n")
    message = NOT_A_BOT_DATABASE.format(path=text)
    assert run(capsys, *command, "--database", str(text)) == (2, "", f"error: {message}\n")
    assert text.read_text() == "not a database at all\n"


def test_a_database_at_another_schema_version_is_refused(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE schema_version SET version = 2")
    conn.close()
    message = SCHEMA_MISMATCH.format(path=database, found=2, expected=len(MIGRATIONS))
    assert run(capsys, "list", "--database", str(database)) == (2, "", f"error: {message}\n")


# -- a reader that goes away ----------------------------------------------------------------


class GonePipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_stdout_ends_quietly(
    database: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", GonePipe())
    assert main(["deliveries", "list", "--database", str(database)]) == 0
    assert main(["deliveries", "show", "d-done", "--database", str(database)]) == 0


def test_piping_into_a_reader_that_left_leaves_no_traceback(database: Path) -> None:
    """``followup-bot deliveries list | head -1`` with ``head`` already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write now fails with EPIPE
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "bot.cli.main",
                "deliveries",
                "list",
                "--database",
                str(database),
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (0, "")
