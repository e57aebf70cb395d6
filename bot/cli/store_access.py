"""What every command that opens the bot's database outside ``serve`` shares.

Such a command opens an existing bot database only (never creating one on a
wrong path, never migrating someone else's file), reports a problem as one
``error:`` line with exit code 2, and ends quietly when its reader goes away
(``| head``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO, TypeVar

import asyncpg

from bot.core.blocking import BlockingRunner
from bot.store.access import Access, StoreUnavailable, redacted
from bot.store.open import store_for
from bot.store.protocol import Store

T = TypeVar("T")

EXIT_OK = 0
EXIT_REFUSED = 2
ERROR = "error: {message}"
DATABASE_ERROR = "{path}: {error}"


@asynccontextmanager
async def opened_store(database: str | Path, access: Access) -> AsyncIterator[Store]:
    """The database (a SQLite file or a PostgreSQL URL) opened as ``access``, with a thread
    of its own for SQLite, and closed when the block ends."""
    blocking = BlockingRunner(max_workers=1)
    store = store_for(str(database), blocking, access=access)
    try:
        await store.open()
        yield store
    finally:
        await store.close()
        blocking.close()


async def with_store(
    database: str | Path, access: Access, work: Callable[[Store], Awaitable[T]]
) -> T:
    """``work`` on the database, opened as ``access`` and closed afterwards."""
    async with opened_store(database, access) as store:
        return await work(store)


def emit(out: TextIO, text: str) -> None:
    out.write(text + "\n")


def guarded(run: Callable[[], int], database: str | Path, out: TextIO, err: TextIO) -> int:
    """``run()``'s exit code; a database problem is one ``error:`` line and exit 2."""
    try:
        code = run()
        out.flush()  # here, not at exit: a reader gone by then is handled below
    except StoreUnavailable as exc:
        emit(err, ERROR.format(message=exc))
        return EXIT_REFUSED
    except (sqlite3.Error, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        # e.g. SQLite still locked by a writer after the busy timeout, or PostgreSQL
        # restarted under the command
        shown = redacted(str(database))
        emit(err, ERROR.format(message=DATABASE_ERROR.format(path=shown, error=exc)))
        return EXIT_REFUSED
    except BrokenPipeError:
        # The reader (``| head``) took what it wanted and left; that is no
        # error. Point stdout at /dev/null so the interpreter's last flush of
        # what is still buffered does not raise (and print a traceback) again.
        discard(out)
        return EXIT_OK
    return code


def discard(out: TextIO) -> None:
    try:
        fileno = out.fileno()
    except (OSError, ValueError):  # not a real file (a test's StringIO), or closed
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fileno)
    finally:
        os.close(devnull)
