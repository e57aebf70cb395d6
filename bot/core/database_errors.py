"""Which database errors a retry can cure, on both backends.

An outage is weather: PostgreSQL restarting, a connection cut, a failover, a busy
SQLite file. Each of these fails the call in flight, and the same call succeeds once
the database is back, so the inbox retries it later instead of failing the delivery.
Everything else a database says (a constraint broken, a syntax error, a wrong type, a
schema that is not the bot's) fails the same way every time: permanent.

PostgreSQL, by SQLSTATE class (asyncpg raises one exception class per code):

- ``08`` connection exceptions (the connection is gone, refused or failed) except
  ``08P01``, a protocol violation, which is a bug in a client and not the network's;
- ``53`` insufficient resources (too many connections, a full disk, out of memory):
  they pass when the load or the disk is relieved;
- ``57P01``/``57P02``/``57P03`` an administrator's or a crash's shutdown, and "cannot
  connect now" (the server is starting or stopping), and ``57P05`` (an idle session
  closed by the server); not ``57P04`` (the database was dropped: no retry brings it
  back) nor ``57014`` (a cancelled statement: the bot cancels none, so it is a timeout
  the bot set, and those are counted as timeouts where they are raised);
- ``40001`` serialization failures, ``40P01`` deadlocks and ``40003`` (the statement's
  completion is unknown because the connection broke at commit): retrying the
  transaction is what PostgreSQL asks of the client.

asyncpg's client side: an ``InterfaceError`` saying a connection or the pool is closed
(or closing) is a connection lost between two calls; other ``InterfaceError``s are the
client misused (a bug). An ``InternalClientError`` is a connection whose protocol state
broke (seen when a server shuts down under an idle pooled connection: "cannot switch
to state ...", a ``ProtocolError``), a statement cache outdated by a schema change, or
a server that is not the primary any more during a failover: each is cured by a
retry on another connection. The connection attempt itself fails with ``OSError``s
(``ConnectionError``, a name that does not resolve) or a timeout, which
``bot.core.errors`` already counts as transient.

SQLite, by primary result code (``sqlite3`` exceptions carry ``sqlite_errorcode``):
``SQLITE_BUSY`` and ``SQLITE_LOCKED`` (another writer; the busy timeout ran out),
``SQLITE_IOERR`` (a disk or a network volume that hiccuped), ``SQLITE_FULL`` (the disk
filled up; it is freed), ``SQLITE_NOMEM`` and ``SQLITE_PROTOCOL`` (a WAL-index race).
"""

from __future__ import annotations

import socket
import sqlite3

import asyncpg

# SQLSTATEs whose whole class is transient, and single codes that are.
TRANSIENT_CLASSES = frozenset({"08", "53"})
PERMANENT_IN_TRANSIENT_CLASS = frozenset({"08P01"})
TRANSIENT_CODES = frozenset({"57P01", "57P02", "57P03", "57P05", "40001", "40P01", "40003"})

# asyncpg's words for a connection or pool that closed under the caller.
CLOSED_WORDS = ("connection is closed", "pool is closed", "pool is closing")

# sqlite3 primary result codes (the low byte of an extended code).
SQLITE_NOMEM = 7
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_IOERR = 10
SQLITE_FULL = 13
SQLITE_PROTOCOL = 15
TRANSIENT_SQLITE = frozenset(
    {SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_IOERR, SQLITE_FULL, SQLITE_PROTOCOL}
)


def transient_sqlstate(code: str) -> bool:
    """Whether a PostgreSQL error with this SQLSTATE is cured by retrying."""
    if code in PERMANENT_IN_TRANSIENT_CLASS:
        return False
    return code[:2] in TRANSIENT_CLASSES or code in TRANSIENT_CODES


def transient_database_error(exc: BaseException) -> bool:
    """Whether ``exc``, raised by asyncpg or sqlite3, is cured by retrying later."""
    if isinstance(exc, asyncpg.PostgresError):
        code = getattr(exc, "sqlstate", None)
        return isinstance(code, str) and transient_sqlstate(code)
    if isinstance(exc, asyncpg.InternalClientError):
        return True
    if isinstance(exc, asyncpg.InterfaceError):
        message = str(exc)
        return any(words in message for words in CLOSED_WORDS)
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return isinstance(code, int) and code & 0xFF in TRANSIENT_SQLITE
    return isinstance(exc, socket.gaierror)
