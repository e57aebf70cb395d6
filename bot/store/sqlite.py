"""The default ``Store``: one SQLite file, stdlib ``sqlite3``.

Longer than 400 lines because the backend's SQL, its migrations and its locking are
read together: a claim, a finish and a prune only make sense next to one another.

Every call runs on the store's own thread (a one-thread ``BlockingRunner`` with
the shared runner's timeout), so the event loop never waits on disk and the
store's calls never queue behind git or parsing work in the shared pool. The one
connection (``check_same_thread=False``) is still guarded by a
``threading.Lock``, which costs nothing uncontended and keeps each call atomic
should a call ever come from elsewhere.

Durability: WAL journal. New deliveries and state documents are committed
with ``synchronous=FULL`` (on disk when the call returns, which is what lets
the webhook answer 202 only once the delivery survives even a power cut).
Status changes (claim, finish, retry) use ``NORMAL``: they survive a process
crash (``kill -9``) but may be lost with the machine, which only means a
delivery runs again, and handlers are idempotent.

Group commit (``bot.store.coalesce``): concurrent ``enqueue`` calls that arrive
while a commit is in flight are written together in the next transaction, so a
burst of webhooks pays for one disk flush per batch instead of one per delivery.
The workers' turns (the end of an attempt and the next claim, with the claimed
delivery's handler log) are batched the same way: one transaction per batch.

Retention: finished deliveries carry ``finished_at`` and state documents
``updated_at``, both from the store's clock, so ``prune`` can delete what is
older than a cutoff, a few hundred rows per transaction. SQLite keeps the
freed pages in the file and reuses them, so under a steady load the file stops
growing once the retention window is full (it does not shrink without VACUUM).

Access: the service opens the file as its owner (creating it and migrating the
schema) and, with ``single_writer``, first takes an exclusive ``flock`` on
``<database>.lock`` for as long as it is open. Two services on one file would
each re-queue the other's running deliveries at start-up and run them twice;
the kernel drops the lock when the process dies, even by ``kill -9``, so a
crash never leaves a stale lock behind. Operators' commands open an existing
bot database without migrating it: read-only (``Access.READ``) or for a short
write (``Access.WRITE``), neither needing the lock, since SQLite already
serialises their transactions with the service's.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar

from bot.core.blocking import BlockingRunner
from bot.store.access import Access, StoreUnavailable
from bot.store.legacy_ids import LEGACY_HANDLER_IDS
from bot.store.outage import Outage
from bot.store.protocol import (
    PRUNE_BATCH,
    Delivery,
    DeliveryRecord,
    DeliveryStatus,
    EnqueueResult,
    InboxStats,
    PruneCounts,
    ReplicaSeen,
    Requeue,
    Settlement,
    StateRecord,
    Store,
    UnknownDelivery,
)
from bot.store.turns import BatchedWrites, Turn

P = ParamSpec("P")
T = TypeVar("T")

STORE_NOT_OPEN = "the SQLite store is not open"
DATABASE_IN_USE = (
    "another followup-bot serve is using {database} (it holds the lock {lock});"
    " run one serve per database"
)
NO_DATABASE = "no database at {path}"
CANNOT_OPEN = "cannot open {path}: {error}"
NOT_A_BOT_DATABASE = "{path} is not a followup-bot database"
SCHEMA_MISMATCH = (
    "{path} has schema version {found}, this followup-bot reads version {expected}"
    " (serve upgrades an older database when it starts)"
)
SINGLE_WRITER_NEEDS_OWNER = "only the owner of a database can hold its single-writer lock"
LOCK_SUFFIX = ".lock"
# Names SQLite gives databases that live in memory: nothing to share, nothing to lock.
_NOT_FILES = ("", ":memory:")


class DatabaseInUse(StoreUnavailable):
    """Another process holds the database's single-writer lock."""


HANDLER_ID_MIGRATION = "".join(
    f"UPDATE handler_runs SET handler = '{new}' WHERE handler = '{old}';\n"
    for old, new in sorted(LEGACY_HANDLER_IDS.items())
)

# Applied in order, each in its own transaction; the schema_version row counts
# how many have been applied. Append new migrations, never edit applied ones.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE deliveries (
        seq INTEGER PRIMARY KEY,
        delivery_id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        event TEXT NOT NULL,
        payload BLOB NOT NULL,
        subject TEXT NOT NULL,
        received_at REAL NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
        next_attempt_at REAL NOT NULL,
        last_error TEXT
    );
    CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
    CREATE INDEX deliveries_by_subject ON deliveries (subject, status);
    CREATE INDEX deliveries_by_age ON deliveries (received_at, seq);
    CREATE TABLE handler_runs (
        delivery_id TEXT NOT NULL REFERENCES deliveries (delivery_id) ON DELETE CASCADE,
        handler TEXT NOT NULL,
        PRIMARY KEY (delivery_id, handler)
    ) WITHOUT ROWID;
    CREATE TABLE state (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (kind, key)
    ) WITHOUT ROWID;
    """,
    # Claiming walks queued rows in arrival order and stops at the first one it
    # may run; without this index every claim sorted the whole queue (O(n) per
    # claim, seconds for a burst of a few thousand deliveries).
    """
    CREATE INDEX deliveries_queue ON deliveries (status, received_at, seq);
    """,
    # Retention ages a delivery from when it finished and a state document from
    # its last write. Deliveries finished before this migration count from
    # their arrival (runs last minutes, retention days); existing documents
    # from the migration, so none is forgotten earlier than a full window.
    """
    ALTER TABLE deliveries ADD COLUMN finished_at REAL;
    UPDATE deliveries SET finished_at = received_at WHERE status IN ('done', 'failed');
    CREATE INDEX deliveries_finished ON deliveries (finished_at)
        WHERE finished_at IS NOT NULL;
    ALTER TABLE state ADD COLUMN updated_at REAL NOT NULL DEFAULT 0;
    UPDATE state SET updated_at = (julianday('now') - 2440587.5) * 86400.0;
    CREATE INDEX state_by_age ON state (kind, updated_at);
    """,
    # Handlers are recorded by explicit ids (bot.service.handler_ids), no longer by
    # module path, so that moving a function never re-runs it for a delivery in flight;
    # and a pin's cooldown record leaves kind "landing", which it shared with the
    # per-PR landing documents (a pin named "42" and PR #42 had one key).
    HANDLER_ID_MIGRATION
    + """
    UPDATE state SET kind = 'pin-cooldown'
        WHERE kind = 'landing'
          AND json_type(value, '$.landed_at') IS NOT NULL
          AND json_type(value, '$.approved_head') IS NULL;
    """,
)

_DELIVERY_COLUMNS = (
    "delivery_id, source, event, payload, subject, received_at, attempts,"
    " status, next_attempt_at, last_error"
)

# Oldest first (arrival order breaks ties between equal timestamps); a subject
# with a RUNNING delivery, or busy in the caller's process, is skipped.
_CLAIM_SQL = f"""
    SELECT {_DELIVERY_COLUMNS} FROM deliveries AS d INDEXED BY deliveries_queue
    WHERE d.status = 'queued'
      AND d.next_attempt_at <= :now
      AND d.subject NOT IN (SELECT value FROM json_each(:busy))
      AND NOT EXISTS (
          SELECT 1 FROM deliveries AS r WHERE r.subject = d.subject AND r.status = 'running'
      )
    ORDER BY d.received_at, d.seq
    LIMIT 1
"""


def split_statements(script: str) -> list[str]:
    """Split an SQL script into complete statements (semicolons in strings are safe)."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n\t;"):
                statements.append(pending.strip())
            pending = ""
    if pending.strip(" \n\t;"):
        statements.append(pending.strip().rstrip(";"))
    return statements


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    # IMMEDIATE takes the write lock up front, so a read-then-write (claim,
    # migrations) cannot interleave with another writer.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _record(row: sqlite3.Row) -> DeliveryRecord:
    return DeliveryRecord(
        delivery=Delivery(
            delivery_id=row["delivery_id"],
            source=row["source"],
            event=row["event"],
            payload=bytes(row["payload"]),
            subject=row["subject"],
            received_at=row["received_at"],
            attempts=row["attempts"],
        ),
        status=DeliveryStatus(row["status"]),
        next_attempt_at=row["next_attempt_at"],
        last_error=row["last_error"],
    )


def _document(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise TypeError(f"stored state is not a JSON object: {type(value).__name__}")
    return value


@dataclasses.dataclass(frozen=True)
class PageCounts:
    """The database file's size in pages, and how many of them are free for reuse."""

    total: int
    free: int
    page_size: int

    @property
    def used(self) -> int:
        return self.total - self.free


class SQLiteStore(BatchedWrites, Store):
    def __init__(
        self,
        path: str,
        blocking: BlockingRunner,
        *,
        clock: Callable[[], float] = time.time,
        access: Access = Access.OWNER,
        single_writer: bool = False,
    ) -> None:
        if single_writer and access is not Access.OWNER:
            raise ValueError(SINGLE_WRITER_NEEDS_OWNER)
        self.path = path
        self._blocking = blocking
        self._clock = clock  # stamps finished deliveries and written documents
        self.outage = Outage(clock)
        self._access = access
        self._single_writer = single_writer
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._lock_fd: int | None = None  # the single-writer lock file, while held
        # One thread of its own: every call goes to the one connection anyway, and a
        # dedicated thread keeps the store's turns from queueing behind git or parsing
        # work in the shared pool. Same timeout as the shared runner.
        # Started by ``open``, stopped by ``close``: a store that was never opened
        # (or is closed) holds no thread.
        self._timeout = blocking.timeout
        self._thread: BlockingRunner | None = None
        BatchedWrites.__init__(self, "sqlite")

    @property
    def lock_path(self) -> str:
        """The file whose ``flock`` makes this store the database's only writer."""
        return self.path + LOCK_SUFFIX

    async def _run(
        self,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        if self._thread is None:
            raise RuntimeError(STORE_NOT_OPEN)
        return await self._thread.run(self._locked, fn, *args, **kwargs)

    def _locked(
        self,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        with self._lock:
            if self._conn is None:
                raise RuntimeError(STORE_NOT_OPEN)
            return fn(self._conn, *args, **kwargs)

    # -- lifecycle -----------------------------------------------------------

    async def open(self) -> None:
        """Connect (the owner: and migrate); ``StoreUnavailable`` says why it cannot.

        With ``single_writer`` the lock comes first: nothing, not even a
        migration, touches a database another service is running on.
        """
        if self._conn is None:
            if self._thread is None:
                self._thread = BlockingRunner(max_workers=1, timeout=self._timeout)
            try:
                self._conn = await self._thread.run(self._open_sync)
            except BaseException:
                self._stop_thread()
                raise

    def _open_sync(self) -> sqlite3.Connection:
        if self._single_writer and self.path not in _NOT_FILES:
            self._lock_fd = _take_writer_lock(self.path, self.lock_path)
        try:
            if self._access is Access.OWNER:
                return self._connect()
            return _connect_existing(self.path, self._access)
        except BaseException:
            self._release_writer_lock()
            raise

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: no implicit transactions; single statements
        # autocommit and multi-statement work uses explicit BEGIN IMMEDIATE.
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA busy_timeout = 5000")
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _release_writer_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor of the open file drops its flock

    async def close(self) -> None:
        await self._written()
        try:
            if self._conn is not None:
                await self._run(_close)
                self._conn = None
        finally:
            self._release_writer_lock()
            self._stop_thread()

    def _stop_thread(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.close(wait=False)  # idle by now: it exits without being joined here

    # -- inbox -----------------------------------------------------------------

    async def _write_admissions(
        self, batch: list[tuple[Delivery, bool]]
    ) -> list[EnqueueResult | BaseException]:
        return list(await self._run(_durable, _enqueue_many, batch))

    async def _write_turns(self, batch: list[Turn]) -> list[Delivery | BaseException | None]:
        return await self._run(_take_turns, batch, self._clock())

    async def requeue(self, delivery_id: str, now: float, *, include_done: bool = False) -> Requeue:
        return await self._run(_durable, _requeue, delivery_id, now, include_done)

    async def requeue_running(self) -> int:
        return await self._run(_requeue_running)

    async def next_due(self) -> float | None:
        return await self._run(_next_due)

    async def count_unfinished(self) -> int:
        return await self._run(_count_unfinished)

    async def inbox_stats(self) -> InboxStats:
        return await self._run(_inbox_stats)

    async def ping(self) -> None:
        await self._run(_ping)

    def set_wakeup(self, ring: Callable[[], None]) -> None:
        """Nothing to listen to: other processes' work is found by the inbox's polling."""

    async def try_lock(self, name: str) -> bool:
        # One serve per file (the single-writer lock): this process is the only one.
        return True

    async def get_delivery(self, delivery_id: str) -> DeliveryRecord | None:
        return await self._run(_get_delivery, delivery_id)

    async def list_deliveries(
        self, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[DeliveryRecord]:
        return await self._run(_list_deliveries, status, limit)

    async def handlers_done(self, delivery_id: str) -> frozenset[str]:
        return await self._run(_handlers_done, delivery_id)

    async def mark_handler_done(self, delivery_id: str, handler: str) -> None:
        await self._run(_mark_handler_done, delivery_id, handler)

    # -- state documents ---------------------------------------------------------

    async def get_state(self, kind: str, key: str) -> dict[str, Any] | None:
        return await self._run(_get_state, kind, key)

    async def put_state(self, kind: str, key: str, value: dict[str, Any]) -> None:
        # FULL durability: state documents record the bot's own writes (e.g. the
        # head it pushed), and forgetting one could mistake the bot for a human.
        # Serialized here, on the caller's side, so a non-JSON value fails fast
        # and the caller cannot mutate the dict while a thread encodes it.
        if not isinstance(value, dict):
            raise TypeError(f"state documents are JSON objects, not {type(value).__name__}")
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
        await self._run(_durable, _put_state, kind, key, text, self._clock())

    async def delete_state(self, kind: str, key: str) -> None:
        await self._run(_delete_state, kind, key)

    async def list_state(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        return await self._run(_list_state, kind)

    # -- read-only views for the status page (bot/status) -------------------------------

    async def recent_state(self, kinds: Collection[str], limit: int) -> list[StateRecord]:
        return await self._run(_recent_state, json.dumps(sorted(set(kinds))), limit)

    async def latest_delivery(self, id_prefix: str) -> DeliveryRecord | None:
        return await self._run(_latest_delivery, id_prefix)

    async def list_replicas(self) -> list[ReplicaSeen]:
        # One serve per file: there are no other replicas to list.
        return []

    # -- retention ---------------------------------------------------------------

    async def prune(
        self, older_than: float, state_kinds: Collection[str], batch_size: int = PRUNE_BATCH
    ) -> PruneCounts:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        # One batch per call: between two batches the lock is free, so claims,
        # finishes and enqueues interleave with a long prune instead of waiting.
        # The cutoff is fixed, so every batch but the last is full and the loops end.
        deliveries = handler_runs = states = batches = 0
        removed = batch_size
        while removed == batch_size:
            removed, runs = await self._run(_prune_deliveries, older_than, batch_size)
            deliveries += removed
            handler_runs += runs
            batches += 1
        kinds = json.dumps(sorted(set(state_kinds)))
        removed = batch_size if state_kinds else 0
        while removed == batch_size:
            removed = await self._run(_prune_states, older_than, kinds, batch_size)
            states += removed
            batches += 1
        return PruneCounts(deliveries, handler_runs, states, batches)

    async def page_counts(self) -> PageCounts:
        """How big the file is (pages in use and free), e.g. to watch retention work."""
        return await self._run(_page_counts)


# -- the synchronous halves, run in a pool thread under the store's lock --------


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the migrations this database lacks; the resulting schema version."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    for version, script in enumerate(MIGRATIONS, start=1):
        # The version is re-read inside the write transaction so two processes
        # opening the same new file cannot both apply a migration.
        with _transaction(conn):
            row = conn.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                conn.execute("INSERT INTO schema_version (version) VALUES (0)")
                current = 0
            else:
                current = int(row[0])
            if current >= version:
                continue
            for statement in split_statements(script):
                conn.execute(statement)
            conn.execute("UPDATE schema_version SET version = ?", (version,))
    return schema_version(conn)


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return 0 if row is None else int(row[0])


def _close(conn: sqlite3.Connection) -> None:
    conn.close()


def _take_writer_lock(database: str, lock_path: str) -> int:
    """An exclusive, non-blocking ``flock`` on ``lock_path``; its descriptor, to keep open.

    The lock file is never deleted: removing it while another process waits
    on it would let two processes hold "the" lock on two different files.
    """
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:  # e.g. a directory the service may not write to
        raise StoreUnavailable(CANNOT_OPEN.format(path=lock_path, error=exc)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DatabaseInUse(DATABASE_IN_USE.format(database=database, lock=lock_path)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _connect_existing(path: str, access: Access) -> sqlite3.Connection:
    """A connection to an existing bot database at the current schema, never migrated.

    The URI's ``mode`` keeps SQLite from creating a missing file, and READ from
    writing anything; a file that is not SQLite, or not the bot's, is refused
    before any query runs on it.
    """
    if not os.path.isfile(path):
        raise StoreUnavailable(NO_DATABASE.format(path=path))
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode={access.value}"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreUnavailable(CANNOT_OPEN.format(path=path, error=exc)) from None
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 5000")
        if access is Access.WRITE:
            conn.execute("PRAGMA foreign_keys = ON")
        try:
            known = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
        except sqlite3.OperationalError as exc:  # busy, unreadable, no room for the WAL index
            raise StoreUnavailable(CANNOT_OPEN.format(path=path, error=exc)) from None
        except sqlite3.DatabaseError:  # not an SQLite file at all
            raise StoreUnavailable(NOT_A_BOT_DATABASE.format(path=path)) from None
        found = 0 if known is None else schema_version(conn)
        if found == 0:
            raise StoreUnavailable(NOT_A_BOT_DATABASE.format(path=path))
        if found != len(MIGRATIONS):
            raise StoreUnavailable(
                SCHEMA_MISMATCH.format(path=path, found=found, expected=len(MIGRATIONS))
            )
    except BaseException:
        conn.close()
        raise
    return conn


def _durable(
    conn: sqlite3.Connection,
    fn: Callable[Concatenate[sqlite3.Connection, P], T],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Run ``fn`` with every commit flushed to disk before returning."""
    conn.execute("PRAGMA synchronous = FULL")
    try:
        return fn(conn, *args, **kwargs)
    finally:
        conn.execute("PRAGMA synchronous = NORMAL")


def _enqueue_many(
    conn: sqlite3.Connection, deliveries: list[tuple[Delivery, bool]]
) -> list[EnqueueResult]:
    with _transaction(conn):
        return [_enqueue(conn, delivery, requeue) for delivery, requeue in deliveries]


def _enqueue(conn: sqlite3.Connection, delivery: Delivery, requeue_failed: bool) -> EnqueueResult:
    # ON CONFLICT names the id on purpose: INSERT OR IGNORE would also swallow
    # CHECK/NOT NULL violations and report them as duplicates.
    # A delivery no handler wants is stored finished: a redelivery is a duplicate, and
    # no worker ever claims it (one write instead of three).
    status, finished_at = ("queued", None) if delivery.wanted else ("done", delivery.received_at)
    cursor = conn.execute(
        f"INSERT INTO deliveries ({_DELIVERY_COLUMNS}, finished_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)"
        " ON CONFLICT (delivery_id) DO NOTHING",
        (
            delivery.delivery_id,
            delivery.source,
            delivery.event,
            delivery.payload,
            delivery.subject,
            delivery.received_at,
            delivery.attempts,
            status,
            delivery.received_at,
            finished_at,
        ),
    )
    if cursor.rowcount == 1:
        return EnqueueResult.NEW
    # Same transaction as the insert: a FAILED row cannot be claimed, pruned or
    # requeued by anyone else between the two statements.
    if requeue_failed and _requeue_row(conn, delivery.delivery_id, delivery.received_at, False):
        return EnqueueResult.REQUEUED
    return EnqueueResult.DUPLICATE


def _requeue_row(conn: sqlite3.Connection, delivery_id: str, due: float, done_too: bool) -> bool:
    """FAILED (or, with ``done_too``, DONE) → QUEUED, due at ``due``, attempts from 0.

    The payload, arrival time and last error stay: the error is what the
    operator is replaying it for, and the next attempt overwrites it.
    ``finished_at`` goes, so retention never deletes a queued delivery.
    """
    cursor = conn.execute(
        "UPDATE deliveries SET status = 'queued', attempts = 0, next_attempt_at = ?,"
        " finished_at = NULL WHERE delivery_id = ? AND status IN ('failed', ?)",
        (due, delivery_id, "done" if done_too else "failed"),
    )
    return cursor.rowcount == 1


def _requeue(conn: sqlite3.Connection, delivery_id: str, now: float, include_done: bool) -> Requeue:
    with _transaction(conn):
        row = conn.execute(
            "SELECT status FROM deliveries WHERE delivery_id = ?", (delivery_id,)
        ).fetchone()
        if row is None:
            return Requeue(None, False)
        previous = DeliveryStatus(row["status"])
        replayable = previous is DeliveryStatus.FAILED or (
            include_done and previous is DeliveryStatus.DONE
        )
        if not replayable:
            return Requeue(previous, False)
        forgotten = 0
        if previous is DeliveryStatus.DONE:
            forgotten = conn.execute(
                "DELETE FROM handler_runs WHERE delivery_id = ?", (delivery_id,)
            ).rowcount
        _requeue_row(conn, delivery_id, now, include_done)
        return Requeue(previous, True, forgotten)


def _take_turns(
    conn: sqlite3.Connection, turns: list[Turn], finished_at: float
) -> list[Delivery | BaseException | None]:
    """Every turn's end, then every turn's claim, in one transaction.

    Ends first: a delivery that a turn finishes frees its subject for the claims
    of the same batch. A turn naming an unknown delivery answers
    ``UnknownDelivery`` and claims nothing; the others go on.
    """
    answers: list[Delivery | BaseException | None] = []
    with _transaction(conn):
        for turn in turns:
            try:
                if turn.settled is not None:
                    _settle(conn, turn.settled, finished_at)
            except UnknownDelivery as exc:
                answers.append(exc)
            else:
                answers.append(None)
        for index, turn in enumerate(turns):
            if turn.claim and answers[index] is None:
                answers[index] = _claim_one(conn, turn.now, turn.busy)
    return answers


def _claim_one(conn: sqlite3.Connection, now: float, busy: frozenset[str]) -> Delivery | None:
    row = conn.execute(_CLAIM_SQL, {"now": now, "busy": json.dumps(sorted(busy))}).fetchone()
    if row is None:
        return None
    conn.execute(
        "UPDATE deliveries SET status = 'running', attempts = attempts + 1 WHERE delivery_id = ?",
        (row["delivery_id"],),
    )
    claimed = _record(row).delivery
    return dataclasses.replace(
        claimed,
        attempts=claimed.attempts + 1,
        handlers_done=_handlers_done(conn, claimed.delivery_id),
    )


def _settle(conn: sqlite3.Connection, settled: Settlement, now: float) -> None:
    finished_at = None if settled.status is DeliveryStatus.QUEUED else now
    for handler in settled.handlers:
        _mark_handler_done(conn, settled.delivery_id, handler)
    cursor = conn.execute(
        "UPDATE deliveries SET status = ?,"
        " next_attempt_at = COALESCE(?, next_attempt_at), last_error = ?, finished_at = ?"
        " WHERE delivery_id = ?",
        (settled.status.value, settled.retry_at, settled.reason, finished_at, settled.delivery_id),
    )
    if cursor.rowcount == 0:
        raise UnknownDelivery(settled.delivery_id)


def _requeue_running(conn: sqlite3.Connection) -> int:
    cursor = conn.execute("UPDATE deliveries SET status = 'queued' WHERE status = 'running'")
    return cursor.rowcount


def _next_due(conn: sqlite3.Connection) -> float | None:
    row = conn.execute(
        "SELECT MIN(next_attempt_at) FROM deliveries WHERE status = 'queued'"
    ).fetchone()
    return None if row[0] is None else float(row[0])


def _count_unfinished(conn: sqlite3.Connection) -> int:
    # One statement, so one snapshot: a delivery moving between QUEUED and
    # RUNNING is counted exactly once.
    row = conn.execute(
        "SELECT COUNT(*) FROM deliveries WHERE status IN ('queued', 'running')"
    ).fetchone()
    return int(row[0])


def _inbox_stats(conn: sqlite3.Connection) -> InboxStats:
    row = conn.execute(
        "SELECT COALESCE(SUM(status = 'queued'), 0), COALESCE(SUM(status = 'running'), 0),"
        " MIN(CASE WHEN status = 'queued' THEN received_at END)"
        " FROM deliveries INDEXED BY deliveries_queue WHERE status IN ('queued', 'running')"
    ).fetchone()
    return InboxStats(int(row[0]), int(row[1]), None if row[2] is None else float(row[2]))


def _ping(conn: sqlite3.Connection) -> None:
    conn.execute("SELECT 1").fetchone()


def _get_delivery(conn: sqlite3.Connection, delivery_id: str) -> DeliveryRecord | None:
    row = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE delivery_id = ?", (delivery_id,)
    ).fetchone()
    return None if row is None else _record(row)


def _list_deliveries(
    conn: sqlite3.Connection, status: DeliveryStatus | None, limit: int
) -> list[DeliveryRecord]:
    status_value = None if status is None else status.value
    rows = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE ? IS NULL OR status = ?"
        " ORDER BY received_at DESC, seq DESC LIMIT ?",
        (status_value, status_value, max(limit, 0)),
    ).fetchall()
    return [_record(row) for row in rows]


def _handlers_done(conn: sqlite3.Connection, delivery_id: str) -> frozenset[str]:
    rows = conn.execute(
        "SELECT handler FROM handler_runs WHERE delivery_id = ?", (delivery_id,)
    ).fetchall()
    return frozenset(row["handler"] for row in rows)


def _mark_handler_done(conn: sqlite3.Connection, delivery_id: str, handler: str) -> None:
    try:
        conn.execute(
            "INSERT INTO handler_runs (delivery_id, handler) VALUES (?, ?)"
            " ON CONFLICT (delivery_id, handler) DO NOTHING",
            (delivery_id, handler),
        )
    except sqlite3.IntegrityError:
        # The only remaining constraint is the foreign key to deliveries.
        raise UnknownDelivery(delivery_id) from None


def _get_state(conn: sqlite3.Connection, kind: str, key: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM state WHERE kind = ? AND key = ?", (kind, key)).fetchone()
    return None if row is None else _document(row["value"])


def _put_state(conn: sqlite3.Connection, kind: str, key: str, text: str, now: float) -> None:
    conn.execute(
        "INSERT INTO state (kind, key, value, updated_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (kind, key) DO UPDATE"
        " SET value = excluded.value, updated_at = excluded.updated_at",
        (kind, key, text, now),
    )


def _delete_state(conn: sqlite3.Connection, kind: str, key: str) -> None:
    conn.execute("DELETE FROM state WHERE kind = ? AND key = ?", (kind, key))


def _list_state(conn: sqlite3.Connection, kind: str) -> list[tuple[str, dict[str, Any]]]:
    rows = conn.execute(
        "SELECT key, value FROM state WHERE kind = ? ORDER BY key", (kind,)
    ).fetchall()
    return [(row["key"], _document(row["value"])) for row in rows]


def _prune_deliveries(conn: sqlite3.Connection, older_than: float, limit: int) -> tuple[int, int]:
    """One batch: up to ``limit`` finished deliveries and their handler runs.

    The status test backs up ``finished_at``, which only DONE and FAILED rows
    carry. Handler runs are deleted explicitly rather than left to the foreign
    key's cascade, which only acts on connections with ``foreign_keys`` on.
    """
    with _transaction(conn):
        ids = [
            (row[0],)
            for row in conn.execute(
                "SELECT delivery_id FROM deliveries INDEXED BY deliveries_finished"
                " WHERE finished_at < ? AND status IN ('done', 'failed')"
                " ORDER BY finished_at LIMIT ?",
                (older_than, limit),
            )
        ]
        runs = conn.executemany("DELETE FROM handler_runs WHERE delivery_id = ?", ids).rowcount
        conn.executemany("DELETE FROM deliveries WHERE delivery_id = ?", ids)
    return len(ids), runs


def _prune_states(conn: sqlite3.Connection, older_than: float, kinds: str, limit: int) -> int:
    """One batch: up to ``limit`` documents of the JSON list ``kinds`` written before the cutoff."""
    with _transaction(conn):
        keys = [
            (row[0], row[1])
            for row in conn.execute(
                "SELECT kind, key FROM state INDEXED BY state_by_age"
                " WHERE kind IN (SELECT value FROM json_each(?)) AND updated_at < ?"
                " LIMIT ?",
                (kinds, older_than, limit),
            )
        ]
        conn.executemany("DELETE FROM state WHERE kind = ? AND key = ?", keys)
    return len(keys)


def _page_counts(conn: sqlite3.Connection) -> PageCounts:
    def pragma(name: str) -> int:
        return int(conn.execute(f"PRAGMA {name}").fetchone()[0])

    return PageCounts(pragma("page_count"), pragma("freelist_count"), pragma("page_size"))


# -- read-only views for the status page (bot/status) -----------------------------------


def _recent_state(conn: sqlite3.Connection, kinds: str, limit: int) -> list[StateRecord]:
    rows = conn.execute(
        "SELECT kind, key, updated_at, value FROM state INDEXED BY state_by_age"
        " WHERE kind IN (SELECT value FROM json_each(?))"
        " ORDER BY updated_at DESC, kind, key LIMIT ?",
        (kinds, limit),
    ).fetchall()
    return [
        StateRecord(row["kind"], row["key"], float(row["updated_at"]), _document(row["value"]))
        for row in rows
    ]


def _latest_delivery(conn: sqlite3.Connection, id_prefix: str) -> DeliveryRecord | None:
    # A range on the unique index of ids (binary order): no scan of the whole inbox.
    row = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM deliveries"
        " WHERE delivery_id >= ? AND delivery_id < ? ORDER BY received_at DESC, seq DESC LIMIT 1",
        (id_prefix, id_prefix + "\U0010ffff"),
    ).fetchone()
    return None if row is None else _record(row)
