"""``followup-bot report flaky`` from the retry audit trail in a real store."""

from __future__ import annotations

import asyncio
import io
import sqlite3
from pathlib import Path

from bot.cli.report_flaky import report_command
from bot.core.blocking import BlockingRunner
from bot.retry.report import NOTHING_YET, flaky_report
from bot.store.kinds import Kind
from bot.store.sqlite import SQLiteStore


def record(
    step: str, outcome: str | None, *, rule: str | None = None, cls: str = "infra"
) -> dict[str, object]:
    return {"step_key": step, "outcome": outcome, "rule": rule, "class": cls}


def test_report_orders_steps_by_confirmed_flakiness() -> None:
    text = flaky_report(
        [
            record("spec-decode", "passed", rule="spec-decode-timeout", cls="known-flaky"),
            record("spec-decode", "passed", rule="spec-decode-timeout", cls="known-flaky"),
            record("gpu-a", "failed"),
            record("gpu-a", None),
            record("gpu-a", "passed"),
        ]
    )
    lines = text.splitlines()
    assert lines[2] == "| spec-decode | 2 | 2 | 0 |"
    assert lines[3] == "| gpu-a | 3 | 1 | 1 |"
    assert "| spec-decode-timeout | 2 | 2 |" in text
    assert "| (infra) | 3 | 1 |" in text


def test_report_without_records() -> None:
    assert flaky_report([]) == NOTHING_YET


def test_report_command_reads_the_database(tmp_path: Path) -> None:
    database = tmp_path / "bot.sqlite3"

    async def fill() -> None:
        blocking = BlockingRunner(1)
        store = SQLiteStore(str(database), blocking)
        await store.open()
        await store.put_state(Kind.RETRY_JOB, "job-1", record("gpu-a", "passed"))
        await store.close()
        blocking.close()

    asyncio.run(fill())
    out, err = io.StringIO(), io.StringIO()
    assert report_command(database, out, err) == 0
    assert "| gpu-a | 1 | 1 | 0 |" in out.getvalue()
    assert report_command(tmp_path / "missing.sqlite3", out, err) == 2
    assert "no database at" in err.getvalue()


def test_report_on_a_foreign_database_creates_nothing_and_says_so(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    out, err = io.StringIO(), io.StringIO()

    assert report_command(other, out, err) == 2

    assert err.getvalue().startswith("error: ")
    assert len(err.getvalue().splitlines()) == 1
    with sqlite3.connect(other) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"notes"}  # no bot tables created in someone else's file


def test_report_on_a_file_that_is_not_sqlite_is_one_error_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not a database at all" * 100)
    out, err = io.StringIO(), io.StringIO()

    assert report_command(junk, out, err) == 2

    assert err.getvalue().startswith("error: ")
    assert "Traceback" not in err.getvalue()
