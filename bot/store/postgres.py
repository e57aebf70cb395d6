"""The PostgreSQL ``Store`` (``FOLLOWUP_BOT_DATABASE=postgresql://...``), for several replicas.

Longer than 400 lines because it is one backend of one protocol, read together: the
inbox's claims and ends, the replicas' presence and recovery, and the documents share
one connection pool, one transaction discipline and one notion of "this replica".

Same semantics as the SQLite store (the store contract tests run on both), plus:

- **Claims across replicas**: ``FOR UPDATE SKIP LOCKED`` picks the oldest due delivery
  whose subject is idle; a subject's later deliveries wait for its earlier ones, and a
  unique index on running deliveries per subject is the last word if two replicas race.
- **Presence and recovery**: each replica holds a session advisory lock, on a connection
  of its own, for as long as it lives, and is listed in ``replicas``. A replica that died
  (``kill -9`` included) loses the lock when the server sees its connection close; any
  replica then finds the lock free, re-queues the deliveries the dead one was running and
  removes it. So a restart re-runs only its own interrupted work, never a live replica's.
- **Wake-ups**: a new delivery or an attempt's end is announced with ``NOTIFY``; every
  other replica's inbox is rung (``set_wakeup``), so work queued elsewhere starts at once.
- **One at a time**: ``try_lock(name)`` is a session lock for periodic work (reconcile
  ticks, retention) that only one replica should do; it is held until the replica stops.
  It is taken on the presence connection, which runs one command at a time: the callers
  (the ticker and retention ask together at start-up) take turns on it.
- **Outages**: a lost connection or a server restarting is transient
  (``bot.core.database_errors``); the recovery loop reports it to ``outage`` (one line
  when it begins, one when the database answers again) and rejoins once it can.
- **Durability**: a commit returns once PostgreSQL has it on disk (``synchronous_commit``
  as the server sets it, on by default), which is what the webhook's 202 waits for.

Driver: asyncpg (see the README's dependency notes).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import time
import uuid
from collections.abc import Callable, Collection
from typing import Any

import asyncpg

from bot.store.access import Access, StoreUnavailable, redacted
from bot.store.outage import Outage
from bot.store.postgres_schema import (
    CLAIM_SQL,
    DELIVERY_COLUMNS,
    ENQUEUE_SQL,
    MIGRATION_LOCK,
    MIGRATIONS,
    NAMED_LOCK_SPACE,
    NOTIFY_CHANNEL,
    REQUEUE_ROW_SQL,
    SETTLE_SQL,
)
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

log = logging.getLogger(__name__)

STORE_NOT_OPEN = "the PostgreSQL store is not open"
CANNOT_CONNECT = "cannot connect to {url}: {error}"
NOT_A_BOT_DATABASE = "{url} holds no followup-bot schema (run followup-bot migrate)"
SCHEMA_MISMATCH = (
    "{url} has schema version {found}, this followup-bot reads version {expected}"
    " (followup-bot migrate upgrades it)"
)
LOG_RECOVERED = "replica %s is gone; re-queued the %d deliveries it was running"
LOG_TAKEN_OVER = (
    "delivery %s is running on replica %s now (this one was thought gone); its end here is"
    " not recorded"
)
LOG_PRESENCE_LOST = "lost the replica connection to the database; rejoining"
LOG_RECOVERY_FAILED = "could not look for replicas that are gone; trying again later"
_FORGET_REPLICA = "DELETE FROM replicas WHERE replica_id = $1"
_FORGET_RUNS = "DELETE FROM handler_runs WHERE delivery_id = $1"
# How often a replica looks for replicas that died and rechecks its own presence.
RECOVERY_INTERVAL = 5.0
COMMAND_TIMEOUT = 30.0


def _affected(status: str) -> int:
    """The row count of a command tag such as ``UPDATE 3`` or ``INSERT 0 1``."""
    return int(status.rsplit(" ", 1)[-1])


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``name``."""
    digest = hashlib.sha256((NAMED_LOCK_SPACE + name).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _delivery(row: asyncpg.Record, **changes: Any) -> Delivery:
    fields = {
        "delivery_id": row["delivery_id"],
        "source": row["source"],
        "event": row["event"],
        "payload": bytes(row["payload"]),
        "subject": row["subject"],
        "received_at": row["received_at"],
        "attempts": row["attempts"],
    }
    return Delivery(**(fields | changes))


def _record(row: asyncpg.Record) -> DeliveryRecord:
    return DeliveryRecord(
        delivery=_delivery(row),
        status=DeliveryStatus(row["status"]),
        next_attempt_at=row["next_attempt_at"],
        last_error=row["last_error"],
    )


def _document(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise TypeError(f"stored state is not a JSON object: {type(value).__name__}")
    return value


class PostgresStore(BatchedWrites, Store):
    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] = time.time,
        access: Access = Access.OWNER,
        pool_size: int = 10,
        recovery_interval: float = RECOVERY_INTERVAL,
    ) -> None:
        self.url = url
        self.replica_id = uuid.uuid4().hex
        self._clock = clock
        self.outage = Outage(clock)
        self._access = access
        self._pool_size = pool_size
        self._recovery_interval = recovery_interval
        self._pool: asyncpg.Pool | None = None
        self._presence: asyncpg.Connection | None = None
        self._presence_key = secrets.randbits(63)
        # asyncpg runs one command per connection at a time ("another operation is in
        # progress"): every command on the presence connection takes this first.
        self._presence_turn = asyncio.Lock()
        self._held_locks: set[int] = set()
        self._wakeup: Callable[[], None] | None = None
        self._recovery: asyncio.Task[None] | None = None
        BatchedWrites.__init__(self, "postgres")

    # -- lifecycle ---------------------------------------------------------------

    async def open(self) -> None:
        """Connect; the owner migrates and joins as a replica. ``StoreUnavailable`` says why not."""
        if self._pool is not None:
            return
        # No floor of idle connections (min_size=0): asyncpg restores a floor after an
        # outage by itself, logging a traceback per try; connections are made when asked.
        pool = await asyncpg.create_pool(
            self.url,
            min_size=0,
            max_size=self._pool_size,
            command_timeout=COMMAND_TIMEOUT,
            server_settings=self._server_settings(),
        )
        try:
            await pool.execute("SELECT 1")
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            await pool.close()
            raise StoreUnavailable(
                CANNOT_CONNECT.format(url=redacted(self.url), error=exc)
            ) from None
        try:
            if self._access is Access.OWNER:
                await migrate(pool)
            else:
                await _check_schema(pool, self.url)
        except BaseException:
            await pool.close()
            raise
        self._pool = pool
        if self._access is Access.OWNER:
            await self._join()
            self._recovery = asyncio.create_task(self._recover_forever(), name="pg-recovery")

    def _server_settings(self) -> dict[str, str]:
        named = {"application_name": self.application_name}
        if self._access is Access.READ:
            return named | {"default_transaction_read_only": "on"}
        return named

    async def close(self) -> None:
        await self._written()
        if self._recovery is not None:
            self._recovery.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recovery
            self._recovery = None
        presence, self._presence = self._presence, None
        if presence is not None:
            with contextlib.suppress(Exception):
                await presence.execute(
                    "DELETE FROM replicas WHERE replica_id = $1", self.replica_id
                )
            with contextlib.suppress(Exception):
                await presence.close()  # its session locks go with it
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @property
    def application_name(self) -> str:
        """How this replica's sessions are named in ``pg_stat_activity``."""
        return f"followup-bot-{self.replica_id[:12]}"

    def _open_pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError(STORE_NOT_OPEN)
        return self._pool

    # -- presence, recovery and wake-ups ---------------------------------------------

    def set_wakeup(self, ring: Callable[[], None]) -> None:
        self._wakeup = ring

    async def _join(self) -> None:
        conn = await asyncpg.connect(
            self.url, command_timeout=COMMAND_TIMEOUT, server_settings=self._server_settings()
        )
        try:
            await conn.execute("SELECT pg_advisory_lock($1)", self._presence_key)
            await conn.execute(
                "INSERT INTO replicas (replica_id, lock_key, started_at) VALUES ($1, $2, $3)"
                " ON CONFLICT (replica_id) DO NOTHING",
                self.replica_id,
                self._presence_key,
                self._clock(),
            )
            await conn.add_listener(NOTIFY_CHANNEL, self._on_notify)
            for key in self._held_locks:  # named locks held before a lost connection
                await conn.fetchval("SELECT pg_try_advisory_lock($1)", key)
        except BaseException:
            await conn.close()
            raise
        self._presence = conn

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        # Our own announcements come back too; this process's inbox already knows.
        if payload != self.replica_id and self._wakeup is not None:
            self._wakeup()

    async def _recover_forever(self) -> None:
        while True:
            await asyncio.sleep(self._recovery_interval)
            try:
                if self._presence is not None and self._presence.is_closed():
                    log.warning(LOG_PRESENCE_LOST)  # once: rejoining is tried until it works
                    self._presence = None
                if self._presence is None:
                    await self._join()
                await self._recover_gone()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                if not self.outage.failed(exc):
                    log.warning(LOG_RECOVERY_FAILED, exc_info=True)
            else:
                self.outage.answered()

    async def requeue_running(self) -> int:
        """At start-up: re-queue what this replica and every replica that is gone were
        running (a previous run of this process included); the count. Live replicas'
        work is never touched."""
        own = _affected(
            await self._open_pool().execute(
                "UPDATE deliveries SET status = 'queued', claimed_by = NULL"
                " WHERE status = 'running' AND claimed_by = $1",
                self.replica_id,
            )
        )
        return own + await self._recover_gone()

    async def _recover_gone(self) -> int:
        """Re-queue what replicas that are gone were running, and forget them; the count."""
        pool = self._open_pool()
        requeued = 0
        async with pool.acquire() as conn:
            rows = await conn.fetch(
                "SELECT replica_id, lock_key FROM replicas WHERE replica_id <> $1", self.replica_id
            )
            for row in rows:
                if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", row["lock_key"]):
                    continue  # alive: its connection still holds the lock
                try:
                    async with conn.transaction():
                        count = _affected(
                            await conn.execute(
                                "UPDATE deliveries SET status = 'queued', claimed_by = NULL"
                                " WHERE status = 'running' AND claimed_by = $1",
                                row["replica_id"],
                            )
                        )
                        await conn.execute(_FORGET_REPLICA, row["replica_id"])
                finally:
                    await conn.execute("SELECT pg_advisory_unlock($1)", row["lock_key"])
                if count:
                    log.warning(LOG_RECOVERED, row["replica_id"], count)
                requeued += count
            # Running with no replica to answer for it (claimed outside any replica).
            requeued += _affected(
                await conn.execute(
                    "UPDATE deliveries SET status = 'queued', claimed_by = NULL"
                    " WHERE status = 'running' AND (claimed_by IS NULL OR claimed_by NOT IN"
                    " (SELECT replica_id FROM replicas))"
                )
            )
        return requeued

    async def try_lock(self, name: str) -> bool:
        """Hold the named lock for as long as this replica lives, if no other replica does."""
        key = lock_key(name)
        if key in self._held_locks:
            return self._presence is not None and not self._presence.is_closed()
        async with self._presence_turn:
            presence = self._presence
            if presence is None:
                return False
            if await presence.fetchval("SELECT pg_try_advisory_lock($1)", key):
                self._held_locks.add(key)
                return True
        return False

    # -- inbox: intake ---------------------------------------------------------------

    async def _write_admissions(
        self, batch: list[tuple[Delivery, bool]]
    ) -> list[EnqueueResult | BaseException]:
        pool = self._open_pool()
        async with pool.acquire() as conn, conn.transaction():
            results: list[EnqueueResult | BaseException] = []
            announce = False
            for delivery, requeue_failed in batch:
                result = await _enqueue(conn, delivery, requeue_failed)
                results.append(result)
                announce |= result is EnqueueResult.REQUEUED or (
                    result is EnqueueResult.NEW and delivery.wanted
                )
            if announce:
                await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, self.replica_id)
        return results

    async def requeue(self, delivery_id: str, now: float, *, include_done: bool = False) -> Requeue:
        pool = self._open_pool()
        async with pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "SELECT status FROM deliveries WHERE delivery_id = $1 FOR UPDATE", delivery_id
            )
            if row is None:
                return Requeue(None, False)
            previous = DeliveryStatus(row["status"])
            done = previous is DeliveryStatus.DONE
            if not (previous is DeliveryStatus.FAILED or (include_done and done)):
                return Requeue(previous, False)
            forgotten = 0
            if done:
                forgotten = _affected(
                    await conn.execute(
                        "DELETE FROM handler_runs WHERE delivery_id = $1", delivery_id
                    )
                )
            await conn.execute(
                REQUEUE_ROW_SQL, delivery_id, now, "done" if include_done else "failed"
            )
            await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, self.replica_id)
        return Requeue(previous, True, forgotten)

    # -- inbox: workers --------------------------------------------------------------

    async def _write_turns(self, batch: list[Turn]) -> list[Delivery | BaseException | None]:
        pool = self._open_pool()
        finished_at = self._clock()
        answers: list[Delivery | BaseException | None] = []
        async with pool.acquire() as conn, conn.transaction():
            for turn in batch:
                try:
                    if turn.settled is not None:
                        await self._settle(conn, turn.settled, finished_at)
                except UnknownDelivery as exc:
                    answers.append(exc)
                else:
                    answers.append(None)
            for index, turn in enumerate(batch):
                if turn.claim and answers[index] is None:
                    answers[index] = await self._claim_one(conn, turn.now, turn.busy)
            if any(turn.settled is not None for turn in batch):
                # An end can free a subject another replica has queued work for.
                await conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, self.replica_id)
        return answers

    async def _settle(self, conn: asyncpg.Connection, settled: Settlement, now: float) -> None:
        row = await conn.fetchrow(
            "SELECT status, claimed_by FROM deliveries WHERE delivery_id = $1 FOR UPDATE",
            settled.delivery_id,
        )
        if row is None:
            raise UnknownDelivery(settled.delivery_id)
        if row["status"] == DeliveryStatus.RUNNING and row["claimed_by"] not in (
            None,
            self.replica_id,
        ):
            log.warning(LOG_TAKEN_OVER, settled.delivery_id, row["claimed_by"])
            return
        if settled.handlers:
            await conn.executemany(
                "INSERT INTO handler_runs (delivery_id, handler) VALUES ($1, $2)"
                " ON CONFLICT DO NOTHING",
                [(settled.delivery_id, handler) for handler in settled.handlers],
            )
        await conn.execute(
            SETTLE_SQL,
            settled.delivery_id,
            settled.status.value,
            settled.retry_at,
            settled.reason,
            None if settled.status is DeliveryStatus.QUEUED else now,
        )

    async def _claim_one(
        self, conn: asyncpg.Connection, now: float, busy: frozenset[str]
    ) -> Delivery | None:
        try:
            async with conn.transaction():  # a savepoint: a lost race undoes only this claim
                row = await conn.fetchrow(CLAIM_SQL, now, sorted(busy), self.replica_id)
        except asyncpg.UniqueViolationError:
            return None  # another replica took this subject in the same instant
        if row is None:
            return None
        # The handlers already done come with the claim (one round trip less per turn).
        return _delivery(row, handlers_done=frozenset(row["handlers_done"]))

    # -- inbox: reads ----------------------------------------------------------------

    async def next_due(self) -> float | None:
        value = await self._open_pool().fetchval(
            "SELECT MIN(next_attempt_at) FROM deliveries WHERE status = 'queued'"
        )
        return None if value is None else float(value)

    async def count_unfinished(self) -> int:
        return int(
            await self._open_pool().fetchval(
                "SELECT COUNT(*) FROM deliveries WHERE status IN ('queued', 'running')"
            )
        )

    async def inbox_stats(self) -> InboxStats:
        row = await self._open_pool().fetchrow(
            "SELECT COUNT(*) FILTER (WHERE status = 'queued') AS queued,"
            " COUNT(*) FILTER (WHERE status = 'running') AS running,"
            " MIN(received_at) FILTER (WHERE status = 'queued') AS oldest"
            " FROM deliveries WHERE status IN ('queued', 'running')"
        )
        assert row is not None  # an aggregate always answers one row
        oldest = row["oldest"]
        return InboxStats(int(row["queued"]), int(row["running"]), oldest)

    async def ping(self) -> None:
        await self._open_pool().fetchval("SELECT 1")

    async def get_delivery(self, delivery_id: str) -> DeliveryRecord | None:
        row = await self._open_pool().fetchrow(
            f"SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE delivery_id = $1", delivery_id
        )
        return None if row is None else _record(row)

    async def list_deliveries(
        self, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[DeliveryRecord]:
        value = None if status is None else status.value
        rows = await self._open_pool().fetch(
            f"SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE $1::text IS NULL OR status = $1"
            " ORDER BY received_at DESC, seq DESC LIMIT $2",
            value,
            max(limit, 0),
        )
        return [_record(row) for row in rows]

    async def handlers_done(self, delivery_id: str) -> frozenset[str]:
        rows = await self._open_pool().fetch(
            "SELECT handler FROM handler_runs WHERE delivery_id = $1", delivery_id
        )
        return frozenset(row["handler"] for row in rows)

    async def mark_handler_done(self, delivery_id: str, handler: str) -> None:
        try:
            await self._open_pool().execute(
                "INSERT INTO handler_runs (delivery_id, handler) VALUES ($1, $2)"
                " ON CONFLICT DO NOTHING",
                delivery_id,
                handler,
            )
        except asyncpg.ForeignKeyViolationError:
            raise UnknownDelivery(delivery_id) from None

    # -- state documents -----------------------------------------------------------------

    async def get_state(self, kind: str, key: str) -> dict[str, Any] | None:
        text = await self._open_pool().fetchval(
            "SELECT value FROM state WHERE kind = $1 AND key = $2", kind, key
        )
        return None if text is None else _document(text)

    async def put_state(self, kind: str, key: str, value: dict[str, Any]) -> None:
        if not isinstance(value, dict):
            raise TypeError(f"state documents are JSON objects, not {type(value).__name__}")
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
        await self._open_pool().execute(
            "INSERT INTO state (kind, key, value, updated_at) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (kind, key) DO UPDATE"
            " SET value = excluded.value, updated_at = excluded.updated_at",
            kind,
            key,
            text,
            self._clock(),
        )

    async def delete_state(self, kind: str, key: str) -> None:
        await self._open_pool().execute("DELETE FROM state WHERE kind = $1 AND key = $2", kind, key)

    async def list_state(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        rows = await self._open_pool().fetch(
            'SELECT key, value FROM state WHERE kind = $1 ORDER BY key COLLATE "C"', kind
        )
        return [(row["key"], _document(row["value"])) for row in rows]

    # -- read-only views for the status page (bot/status) ----------------------------------

    async def recent_state(self, kinds: Collection[str], limit: int) -> list[StateRecord]:
        rows = await self._open_pool().fetch(
            "SELECT kind, key, updated_at, value FROM state WHERE kind = ANY($1::text[])"
            ' ORDER BY updated_at DESC, kind COLLATE "C", key COLLATE "C" LIMIT $2',
            sorted(set(kinds)),
            limit,
        )
        return [
            StateRecord(row["kind"], row["key"], float(row["updated_at"]), _document(row["value"]))
            for row in rows
        ]

    async def latest_delivery(self, id_prefix: str) -> DeliveryRecord | None:
        row = await self._open_pool().fetchrow(
            f"SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE starts_with(delivery_id, $1)"
            " ORDER BY received_at DESC, seq DESC LIMIT 1",
            id_prefix,
        )
        return None if row is None else _record(row)

    async def list_replicas(self) -> list[ReplicaSeen]:
        rows = await self._open_pool().fetch(
            "SELECT replica_id, started_at FROM replicas ORDER BY started_at, replica_id"
        )
        return [ReplicaSeen(row["replica_id"], float(row["started_at"])) for row in rows]

    # -- retention -------------------------------------------------------------------------

    async def prune(
        self, older_than: float, state_kinds: Collection[str], batch_size: int = PRUNE_BATCH
    ) -> PruneCounts:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        pool = self._open_pool()
        deliveries = handler_runs = states = batches = 0
        removed = batch_size
        while removed == batch_size:
            async with pool.acquire() as conn, conn.transaction():
                ids = [
                    row["delivery_id"]
                    for row in await conn.fetch(
                        "SELECT delivery_id FROM deliveries WHERE finished_at < $1"
                        " AND status IN ('done', 'failed') ORDER BY finished_at LIMIT $2"
                        " FOR UPDATE SKIP LOCKED",
                        older_than,
                        batch_size,
                    )
                ]
                handler_runs += _affected(
                    await conn.execute(
                        "DELETE FROM handler_runs WHERE delivery_id = ANY($1::text[])", ids
                    )
                )
                await conn.execute(
                    "DELETE FROM deliveries WHERE delivery_id = ANY($1::text[])", ids
                )
            removed = len(ids)
            deliveries += removed
            batches += 1
        kinds = sorted(set(state_kinds))
        removed = batch_size if kinds else 0
        while removed == batch_size:
            removed = _affected(
                await pool.execute(
                    "DELETE FROM state WHERE (kind, key) IN (SELECT kind, key FROM state"
                    " WHERE kind = ANY($1::text[]) AND updated_at < $2 LIMIT $3)",
                    kinds,
                    older_than,
                    batch_size,
                )
            )
            states += removed
            batches += 1
        return PruneCounts(deliveries, handler_runs, states, batches)


async def _enqueue(
    conn: asyncpg.Connection, delivery: Delivery, requeue_failed: bool
) -> EnqueueResult:
    # Stored finished when no handler wants it, as in the SQLite store.
    status, finished_at = ("queued", None) if delivery.wanted else ("done", delivery.received_at)
    inserted = await conn.execute(
        ENQUEUE_SQL,
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
    )
    if _affected(inserted) == 1:
        return EnqueueResult.NEW
    if requeue_failed and _affected(
        await conn.execute(REQUEUE_ROW_SQL, delivery.delivery_id, delivery.received_at, "failed")
    ):
        return EnqueueResult.REQUEUED
    return EnqueueResult.DUPLICATE


async def migrate_url(url: str) -> int:
    """``migrate`` the database at ``url`` (``followup-bot migrate``); its schema version."""
    try:
        pool = await asyncpg.create_pool(url, min_size=1, max_size=1)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise StoreUnavailable(CANNOT_CONNECT.format(url=redacted(url), error=exc)) from None
    try:
        return await migrate(pool)
    finally:
        await pool.close()


async def migrate(pool: asyncpg.Pool) -> int:
    """Apply the migrations this database lacks, one replica at a time; the resulting version."""
    async with pool.acquire() as conn:
        for version, script in enumerate(MIGRATIONS, start=1):
            async with conn.transaction():
                # Under the lock, the version table's creation too: two replicas starting
                # together would otherwise race even on CREATE TABLE IF NOT EXISTS.
                await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
                )
                current = await conn.fetchval("SELECT version FROM schema_version")
                if current is None:
                    await conn.execute("INSERT INTO schema_version (version) VALUES (0)")
                    current = 0
                if current >= version:
                    continue
                await conn.execute(script)
                await conn.execute("UPDATE schema_version SET version = $1", version)
        return int(await conn.fetchval("SELECT version FROM schema_version"))


async def _check_schema(pool: asyncpg.Pool, url: str) -> None:
    shown = redacted(url)
    exists = await pool.fetchval("SELECT to_regclass('schema_version') IS NOT NULL")
    found = int(await pool.fetchval("SELECT version FROM schema_version") or 0) if exists else 0
    if found == 0:
        raise StoreUnavailable(NOT_A_BOT_DATABASE.format(url=shown))
    if found != len(MIGRATIONS):
        raise StoreUnavailable(
            SCHEMA_MISMATCH.format(url=shown, found=found, expected=len(MIGRATIONS))
        )
