"""Database errors a retry can cure are transient, on both backends; the rest are not.

The outage itself (one line when it begins, one when it ends, backoff in between) is
``bot.store.outage``, tested here too.
"""

from __future__ import annotations

import logging
import socket
import sqlite3
from pathlib import Path

import asyncpg
import pytest

from bot.core.database_errors import transient_database_error, transient_sqlstate
from bot.core.errors import PermanentError, is_transient
from bot.store.outage import LOG_BACK, LOG_UNREACHABLE, PAUSE_CAP, Outage, pause

pg = asyncpg.exceptions


@pytest.mark.parametrize(
    "exc",
    [
        pg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        pg.ConnectionFailureError("connection failure"),
        pg.ClientCannotConnectError("cannot connect"),
        pg.CannotConnectNowError("the database system is starting up"),
        pg.AdminShutdownError("terminating connection due to administrator command"),
        pg.CrashShutdownError("terminating connection because of crash of another process"),
        pg.TooManyConnectionsError("sorry, too many clients already"),
        pg.DiskFullError("could not extend file"),
        pg.SerializationError("could not serialize access"),
        pg.DeadlockDetectedError("deadlock detected"),
        pg.InterfaceError("cannot call Connection.fetch(): connection is closed"),
        pg.InterfaceError("pool is closing"),
        pg.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
        pg.OutdatedSchemaCacheError("cached statement plan is invalid"),
        ConnectionRefusedError(111, "Connect call failed"),
        socket.gaierror(-2, "Name or service not known"),
        TimeoutError(),
    ],
)
def test_what_a_retry_cures_on_postgresql_is_transient(exc: BaseException) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        pg.UniqueViolationError("duplicate key"),
        pg.UndefinedTableError('relation "deliveries" does not exist'),
        pg.PostgresSyntaxError("syntax error"),
        pg.ProtocolViolationError("protocol violation"),
        pg.DatabaseDroppedError("the database was dropped"),
        pg.InterfaceError("cannot perform operation: another operation is in progress"),
        pg.DataError("invalid input for query argument"),
    ],
)
def test_what_fails_again_on_postgresql_is_not(exc: BaseException) -> None:
    assert not is_transient(exc)


@pytest.mark.parametrize(
    ("code", "transient"),
    [
        ("08006", True),
        ("08P01", False),
        ("53300", True),
        ("57P03", True),
        ("57P04", False),
        ("57014", False),
        ("40001", True),
        ("40P01", True),
        ("40002", False),
        ("23505", False),
    ],
)
def test_sqlstates_decide_class_by_class(code: str, transient: bool) -> None:
    assert transient_sqlstate(code) is transient


def test_a_locked_sqlite_file_is_transient(tmp_path: Path) -> None:
    path = tmp_path / "busy.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError) as raised:
            other.execute("INSERT INTO t VALUES (1)")
    finally:
        other.close()
        holder.close()
    assert "locked" in str(raised.value)
    assert is_transient(raised.value)


@pytest.mark.parametrize(("code", "transient"), [(10, True), (13, True), (266, True), (19, False)])
def test_sqlite_decides_by_its_primary_result_code(code: int, transient: bool) -> None:
    # 266 is SQLITE_IOERR_READ (an extended code of SQLITE_IOERR), 19 a constraint.
    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorcode = code
    assert transient_database_error(exc) is transient


def test_sqlite_errors_of_the_module_itself_are_not_transient() -> None:
    assert not is_transient(sqlite3.ProgrammingError("Cannot operate on a closed database."))
    assert not is_transient(ValueError("not a database error"))


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_one_line_when_it_begins_and_one_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.store.outage")
    clock = Clock()
    outage = Outage(clock)
    lost = pg.ConnectionDoesNotExistError("connection was closed in the middle of operation")
    for _ in range(50):  # every worker, every try
        assert outage.failed(lost)
        clock.now += 1.0
    assert outage.since == 1_700_000_000.0
    assert outage.down
    outage.answered()
    outage.answered()
    assert outage.since is None

    assert [r.msg for r in caplog.records] == [LOG_UNREACHABLE, LOG_BACK]
    assert all(r.exc_info is None for r in caplog.records)
    assert caplog.records[0].levelno == logging.WARNING
    assert "2023-11-14T22:13:20+00:00" in caplog.records[0].getMessage()
    assert "ConnectionDoesNotExistError" in caplog.records[0].getMessage()
    assert "back after 50.0 s" in caplog.records[1].getMessage()


def test_an_error_that_is_no_outage_is_left_to_the_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = Outage(Clock())
    assert not outage.failed(PermanentError("a bad payload"))
    assert not outage.failed(pg.UniqueViolationError("duplicate key"))
    assert outage.since is None
    assert caplog.records == []


@pytest.mark.parametrize(
    ("failures", "rand", "expected"),
    [
        (1, 0.0, 0.25),
        (1, 1.0, 0.5),
        (2, 0.5, 0.75),
        (4, 0.0, 2.0),
        (30, 0.0, PAUSE_CAP / 2),
        (30, 1.0, PAUSE_CAP),
    ],
)
def test_pauses_double_with_half_of_each_as_jitter_up_to_a_cap(
    failures: int, rand: float, expected: float
) -> None:
    assert pause(failures, rand) == expected
