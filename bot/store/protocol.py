"""The bot's durable state, as a protocol every backend implements.

Two kinds of data live here: the *inbox* (every delivery, webhook or internal,
with its status, so a crash or restart loses nothing) and small JSON *state
documents* keyed by ``(kind, key)`` that make side effects idempotent (the
bump branch of a pin, the reply to a command comment, ...). The protocol says
nothing about SQL so a PostgreSQL backend can follow the SQLite one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from bot.store.outage import Outage


@dataclass(frozen=True)
class Delivery:
    """One unit of work: a webhook delivery or an internal (reconcile) event."""

    delivery_id: str  # GitHub's X-GitHub-Delivery, or a generated id; the dedupe key
    source: str  # "github" | "buildkite" | "internal"
    event: str  # e.g. "pull_request"
    payload: bytes  # the raw body, exactly as signed
    subject: str  # deliveries with the same subject never run concurrently
    received_at: float  # epoch seconds
    attempts: int = 0  # attempts started so far (a claim counts as one)
    # False: no handler wants it; stored already done (kept for dedupe and the
    # operator's view), never claimed by a worker. Not a column of its own.
    wanted: bool = True
    # In memory only, never stored or compared. ``parsed``: the payload as the
    # intake parsed it, handed to the worker of the same process so the body is
    # parsed once. ``handlers_done``: the handlers already completed, read by the
    # claim in its own transaction (None: not read; ask the store).
    parsed: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    handlers_done: frozenset[str] | None = field(default=None, compare=False)


class DeliveryStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class DeliveryRecord:
    delivery: Delivery
    status: DeliveryStatus
    next_attempt_at: float
    last_error: str | None


class EnqueueResult(StrEnum):
    """What ``Store.enqueue_or_requeue`` did with a delivery."""

    NEW = "new"  # stored for the first time
    REQUEUED = "requeued"  # known and FAILED: queued to run again
    DUPLICATE = "duplicate"  # known and queued, running or done: dropped


@dataclass(frozen=True)
class Requeue:
    """What ``Store.requeue`` found and did."""

    previous: DeliveryStatus | None  # None: no delivery has that id
    requeued: bool
    handlers_forgotten: int = 0  # handler runs dropped (only when a DONE one is requeued)


@dataclass(frozen=True)
class InboxStats:
    """The inbox at one moment, for metrics and readiness."""

    queued: int  # QUEUED, due or not
    running: int
    oldest_queued_at: float | None  # the earliest arrival among QUEUED deliveries


@dataclass(frozen=True)
class Settlement:
    """How one attempt at a claimed delivery ended, for ``Store.settle_and_claim``."""

    delivery_id: str
    status: DeliveryStatus  # DONE, QUEUED (to retry at ``retry_at``) or FAILED
    handlers: tuple[str, ...] = ()  # DONE: handlers completed but not yet recorded
    retry_at: float | None = None  # QUEUED: when the delivery falls due again
    reason: str | None = None  # QUEUED or FAILED: why the attempt failed

    def __post_init__(self) -> None:
        if self.status is DeliveryStatus.RUNNING:
            raise ValueError(SETTLED_AS_RUNNING)
        if (self.status is DeliveryStatus.QUEUED) != (self.retry_at is not None):
            raise ValueError(RETRY_NEEDS_A_TIME)


SETTLED_AS_RUNNING = "an attempt ends DONE, QUEUED or FAILED, not RUNNING"
RETRY_NEEDS_A_TIME = "a delivery settles QUEUED exactly when it has a retry time"


class UnknownDelivery(KeyError):
    """A status change named a delivery id the store has never seen."""


# Rows deleted per transaction by ``Store.prune``: small enough that a large
# backlog never holds the write lock for long, so deliveries keep flowing.
PRUNE_BATCH = 500


@dataclass(frozen=True)
class PruneCounts:
    """What one ``Store.prune`` removed, and in how many transactions."""

    deliveries: int = 0
    handler_runs: int = 0
    states: int = 0
    batches: int = 0


# --- read-only views for the status page (bot/status) ----------------------------------


@dataclass(frozen=True)
class StateRecord:
    """One state document with the time it was last written (``Store.recent_state``)."""

    kind: str
    key: str
    updated_at: float  # epoch seconds of the last ``put_state``
    value: dict[str, Any]


@dataclass(frozen=True)
class ReplicaSeen:
    """A live replica sharing the database (``Store.list_replicas``)."""

    replica_id: str
    started_at: float


# --- end of the status page's views ------------------------------------------------------


class Store(Protocol):
    # Whether the database answers, as this process's loops find it: ``outage.since``
    # is when the current outage began (None: reachable). See ``bot.store.outage``.
    outage: Outage

    async def open(self) -> None:
        """Connect and bring the schema up to date; call once before anything else."""

    async def close(self) -> None:
        """Release the connection; the store may not be used afterwards."""

    async def enqueue(self, delivery: Delivery) -> bool:
        """Record ``delivery`` as QUEUED and due now; durable when this returns.

        ``False`` when the delivery id is already known, whatever its status:
        that is how internal work avoids submitting the same thing twice.
        """

    async def enqueue_or_requeue(self, delivery: Delivery) -> EnqueueResult:
        """Like ``enqueue``, but a known FAILED id is queued again, atomically.

        This is a sender's redelivery (GitHub's "Redeliver" keeps the delivery
        id), the one way to get a lost command or approval back. The row becomes
        QUEUED, due at ``delivery.received_at``, with 0 attempts; its stored
        payload, arrival time and handler runs are kept, so handlers that already
        completed for it are not run again. A known QUEUED, RUNNING or DONE id is
        a ``DUPLICATE``. Durable when this returns.
        """

    async def requeue(self, delivery_id: str, now: float, *, include_done: bool = False) -> Requeue:
        """Queue a FAILED delivery (with ``include_done``, a DONE one too) again, atomically.

        Due at ``now``, with 0 attempts. A DONE delivery's handler runs are
        forgotten: all its handlers completed, so keeping them would replay
        nothing. Unknown ids and QUEUED or RUNNING deliveries are left alone
        (``requeued`` is False). Durable when this returns.
        """

    async def claim(self, now: float, busy_subjects: frozenset[str]) -> Delivery | None:
        """Atomically take the oldest QUEUED delivery due at ``now``.

        Skips deliveries whose subject is in ``busy_subjects`` or has a RUNNING
        delivery. The claimed delivery becomes RUNNING with ``attempts + 1``
        (the returned value carries the new count and ``handlers_done``).
        """

    async def settle_and_claim(
        self,
        settled: Settlement | None,
        now: float,
        busy_subjects: frozenset[str],
        *,
        claim: bool = True,
    ) -> Delivery | None:
        """Record how an attempt ended and (with ``claim``) ``claim`` the next delivery.

        The worker's whole turn in one transaction: its end (``settled``), then
        its next claim. Calls made while another is being written are written
        together, in one transaction: a busy inbox pays one commit and one
        thread hop for every worker's turn. ``UnknownDelivery`` if ``settled``
        names an id the store does not have (the other calls of its batch go on).
        """

    async def finish(self, delivery_id: str, *, handlers: Collection[str] = ()) -> None:
        """Mark DONE (as of now: ``prune`` ages finished deliveries from then), and
        ``handlers`` completed, in one transaction (the last handler of a delivery is
        recorded with its end: one write fewer, the same crash window).

        ``UnknownDelivery`` if the id is not stored (same for the next two).
        """

    async def retry_later(self, delivery_id: str, at: float, reason: str) -> None:
        """Back to QUEUED, due at ``at``, remembering why the attempt failed."""

    async def fail(self, delivery_id: str, reason: str) -> None:
        """Mark FAILED for good, with the reason."""

    async def requeue_running(self) -> int:
        """Turn every RUNNING delivery back into QUEUED; the count. For start-up only.

        On a database several replicas share: every RUNNING delivery that no *other*
        live replica is running (this process's own and those of replicas that died).
        """

    async def next_due(self) -> float | None:
        """The earliest ``next_attempt_at`` among QUEUED deliveries, if any."""

    async def count_unfinished(self) -> int:
        """How many deliveries are QUEUED (due or not) or RUNNING, counted atomically."""

    async def inbox_stats(self) -> InboxStats:
        """Counts of QUEUED and RUNNING deliveries and the oldest queued arrival, in one read."""

    async def ping(self) -> None:
        """A round trip to the database; raises when it cannot be reached (readiness)."""

    def set_wakeup(self, ring: Callable[[], None]) -> None:
        """Call ``ring`` when another process queues work or frees a subject (where the
        backend can tell; others leave it to the inbox's polling)."""

    async def try_lock(self, name: str) -> bool:
        """Whether this process holds (or now takes) the named lock for periodic work only
        one process should do, e.g. reconcile ticks; held until the store closes."""

    async def get_delivery(self, delivery_id: str) -> DeliveryRecord | None: ...

    async def list_deliveries(
        self, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[DeliveryRecord]:
        """Deliveries (of ``status``, if given), most recently received first."""

    async def handlers_done(self, delivery_id: str) -> frozenset[str]:
        """Names of the handlers that already completed for this delivery."""

    async def mark_handler_done(self, delivery_id: str, handler: str) -> None:
        """Remember that ``handler`` completed, so a retry of the delivery skips it."""

    async def get_state(self, kind: str, key: str) -> dict[str, Any] | None: ...

    async def put_state(self, kind: str, key: str, value: dict[str, Any]) -> None:
        """Insert or replace a JSON document; its age for ``prune`` starts again."""

    async def delete_state(self, kind: str, key: str) -> None:
        """Remove a document; no error if there is none."""

    async def list_state(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """Every ``(key, document)`` of ``kind``, ordered by key."""

    async def prune(
        self, older_than: float, state_kinds: Collection[str], batch_size: int = PRUNE_BATCH
    ) -> PruneCounts:
        """Forget what has been finished or idle since before ``older_than`` (epoch seconds).

        Deletes DONE and FAILED deliveries that finished before the cutoff, with
        their handler runs, and the documents of ``state_kinds`` last written
        before it. QUEUED and RUNNING deliveries are never deleted, nor documents
        of other kinds. Works in transactions of at most ``batch_size`` rows each,
        looping until nothing older is left.
        """

    # --- read-only views for the status page (bot/status) ---------------------------------

    async def recent_state(self, kinds: Collection[str], limit: int) -> list[StateRecord]:
        """The ``limit`` documents of ``kinds`` written last, newest first."""

    async def latest_delivery(self, id_prefix: str) -> DeliveryRecord | None:
        """The delivery received last among those whose id starts with ``id_prefix``."""

    async def list_replicas(self) -> list[ReplicaSeen]:
        """The live replicas sharing the database, oldest first (empty where the backend
        serves one process only)."""
