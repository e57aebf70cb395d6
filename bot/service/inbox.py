"""The durable inbox: workers that run stored deliveries, one subject at a time.

Everything the bot does starts as a ``Delivery`` written to the store before
anyone acts on it, so a crash or a restart loses nothing: deliveries a dead
process was running are still RUNNING in the store and ``start`` queues them
again. Workers claim the oldest due delivery whose subject is idle, which is
what keeps two events about the same pin or PR from racing each other.

Waking up uses one "something changed" ``asyncio.Event`` that is replaced
every time it fires: a worker (or ``wait_idle``) takes the current event
*before* looking at the store, so a change that lands after the look still
wakes it, and there is no shared ``clear()`` to race on.

Those wake-ups only come from this process. Work another process puts in the
store (``followup-bot deliveries replay``) rings nobody, so an idle worker
also looks again every ``poll_interval`` seconds: a replay is picked up within
that time, and the idle cost is a couple of indexed queries per worker.

A sender's redelivery of a delivery that FAILED (GitHub's "Redeliver" keeps
its id) is queued again through ``admit``; any other known id is a duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from bot.core import metrics as outcomes
from bot.core.metrics import Metrics
from bot.service.attempt_end import AttemptEnd, RetryPolicy, after_failure, done, gave_up
from bot.service.delivery_watch import ADMITTED, ENDED, attempt_logged
from bot.store.outage import Outage, pause
from bot.store.protocol import (
    Delivery,
    EnqueueResult,
    Store,
    UnknownDelivery,
)

logger = logging.getLogger(__name__)

# A dispatcher returns the handlers it completed but did not record (None: none).
Dispatcher = Callable[[Delivery], Awaitable[Sequence[str] | None]]

LOG_OUTCOME = "delivery %s (%s, subject %s) attempt %d: %s"
LOG_DUPLICATE = "delivery %s (%s) is a duplicate; dropped"
LOG_REDELIVERED = (
    "delivery %s (%s) had failed and was delivered again: queued to run again"
    " (handlers that completed before are skipped)"
)
LOG_BODY_DIFFERS = (
    "the redelivery of %s has a different body from the stored one; the stored one is kept"
)
LOG_BODY_CHECK_FAILED = "could not compare the redelivery of %s with the stored body"
LOG_REQUEUED = "requeued %d deliveries interrupted by the previous run"
LOG_WORKER_ERROR = "inbox worker %s hit a store error that is no outage; pausing"
LOG_NOT_RECORDED = "stopping: could not record the end of %s; it runs again at the next start"
LOG_VANISHED = "delivery %s was deleted while it ran; its end is not recorded"
ALREADY_STARTED = "the inbox is already running"

# How often an idle worker looks at the store unasked, for work another process
# queued (a replay from the command line): no in-process event announces it.
EXTERNAL_POLL_INTERVAL = 2.0
# Parsed payloads kept from intake for this process's workers (see Delivery.parsed):
# beyond this many waiting deliveries, a worker parses the stored body itself.
PARSED_KEPT = 1024


# (source, event, payload) -> whether a handler takes it; see ``bot.service.dispatch``.
Wants = Callable[[str, str, Mapping[str, Any]], bool]


class Inbox:
    def __init__(
        self,
        store: Store,
        dispatch: Dispatcher,
        *,
        workers: int = 4,
        max_attempts: int = 8,
        backoff_base: float = 2.0,
        backoff_max: float = 600.0,
        clock: Callable[[], float] = time.time,
        rng: Callable[[], float] = random.random,
        poll_interval: float = EXTERNAL_POLL_INTERVAL,
        wants: Wants | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if poll_interval <= 0:
            raise ValueError("poll_interval must be positive")
        self._poll_interval = poll_interval
        self._wants = wants
        self._store = store
        self._dispatch = dispatch
        self._workers = workers
        self._policy = RetryPolicy(max_attempts, backoff_base, backoff_max)
        self._clock = clock
        self._rng = rng
        self._busy: set[str] = set()  # running, or held by a worker until its next claim
        self._running: set[str] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()  # for wait_idle: a delivery finished or moved
        self._idle_workers: list[asyncio.Future[None]] = []
        self._unanswered_rings = 0
        self._stopping = False
        self._parsed: OrderedDict[str, Mapping[str, Any]] = OrderedDict()
        self._metrics = metrics if metrics is not None else Metrics()

    def wants(self, source: str, event: str, payload: Mapping[str, Any]) -> bool:
        """Whether any handler takes this delivery (without a router: assume so)."""
        return True if self._wants is None else self._wants(source, event, payload)

    @property
    def outage(self) -> Outage:
        """The store's: whether (and since when) this process finds the database away."""
        return self._store.outage

    @property
    def busy_subjects(self) -> frozenset[str]:
        """Subjects a worker of this process is running right now."""
        return frozenset(self._running)

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        if self._tasks:
            raise RuntimeError(ALREADY_STARTED)
        self._stopping = False
        self._busy.clear()  # subjects held by workers of a previous start
        requeued = await self._store.requeue_running()
        # Work other replicas queue (or subjects they free) rings here too.
        self._store.set_wakeup(self._ring)
        if requeued:
            logger.warning(LOG_REQUEUED, requeued)
        self._tasks = [
            asyncio.create_task(self._work(f"inbox-worker-{n}"), name=f"inbox-worker-{n}")
            for n in range(self._workers)
        ]

    async def stop(self) -> None:
        """Cancel the workers and wait for them; interrupted deliveries stay RUNNING."""
        tasks, self._tasks = self._tasks, []
        self._stopping = True
        for task in tasks:
            task.cancel()
        self._ring(everyone=True)  # wakes a worker that missed its cancellation
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- intake and observation ------------------------------------------------

    async def submit(self, delivery: Delivery) -> bool:
        """Store ``delivery`` durably and wake a worker; ``False`` for a known id.

        For the bot's own work, whose ids are derived so that a rerun adds
        nothing: a known id is dropped whatever its status.
        """
        accepted = await self._store.enqueue(delivery)
        outcome = outcomes.ACCEPTED if accepted else outcomes.DUPLICATE
        self._metrics.delivery(delivery.source, delivery.event, outcome)
        if accepted:
            self._remember_parsed(delivery)
            self._wake_for(delivery)
        else:
            logger.info(LOG_DUPLICATE, delivery.delivery_id, delivery.event)
        return accepted

    async def admit(self, delivery: Delivery) -> EnqueueResult:
        """``submit`` for a sender's delivery: a known FAILED id is queued again.

        A sender redelivers (same id) to get a lost delivery back, so one that
        failed runs again, minus the handlers that completed; a known QUEUED,
        RUNNING or DONE id is a duplicate.
        """
        try:
            result = await self._store.enqueue_or_requeue(delivery)
        except Exception as exc:
            self._metrics.delivery(delivery.source, delivery.event, outcomes.NOT_STORED)
            self._store.outage.failed(exc)  # the intake answers 503: the sender redelivers
            raise
        self._store.outage.answered()
        self._metrics.delivery(delivery.source, delivery.event, ADMITTED[result])
        if result is EnqueueResult.DUPLICATE:
            logger.info(LOG_DUPLICATE, delivery.delivery_id, delivery.event)
            return result
        if result is EnqueueResult.REQUEUED:
            logger.info(LOG_REDELIVERED, delivery.delivery_id, delivery.event)
            await self._warn_if_body_differs(delivery)
        if delivery.wanted and result is EnqueueResult.NEW:
            self._remember_parsed(delivery)
        if delivery.wanted or result is EnqueueResult.REQUEUED:
            self._wake_for(delivery)
        return result

    async def _warn_if_body_differs(self, delivery: Delivery) -> None:
        # GitHub redelivers the same bytes, so a different body is worth a look
        # (a forged or edited resend); the stored payload, the one that was
        # first accepted, is what runs. Only a diagnosis: the requeue stands.
        try:
            stored = await self._store.get_delivery(delivery.delivery_id)
        except Exception:
            logger.warning(LOG_BODY_CHECK_FAILED, delivery.delivery_id, exc_info=True)
            return
        if stored is not None and stored.delivery.payload != delivery.payload:
            logger.warning(LOG_BODY_DIFFERS, delivery.delivery_id)

    def _wake_for(self, delivery: Delivery) -> None:
        # A worker running this subject will claim the new delivery when it
        # finishes; waking an idle one would only make it scan the queue in vain.
        if delivery.subject not in self._busy:
            self._ring()

    async def wait_idle(self) -> None:
        """Return once no delivery is QUEUED (due or not) or RUNNING."""
        while True:
            changed = self._changed
            if await self._store.count_unfinished() == 0:
                return
            await changed.wait()

    def _signal(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _ring(self, *, everyone: bool = False) -> None:
        """Wake one idle worker (or all); remembered if none is waiting yet.

        One at a time, because every woken worker runs a claim query: waking
        them all for each new delivery made a burst cost a claim per worker.
        """
        waiting = [f for f in self._idle_workers if not f.done()]
        for future in waiting if everyone else waiting[:1]:
            future.set_result(None)
        if not waiting:
            self._unanswered_rings = min(self._unanswered_rings + 1, self._workers)

    async def _wait_for_ring(self, wait: float | None) -> None:
        if self._unanswered_rings:
            # Rung while this worker was busy claiming: look again at once.
            self._unanswered_rings -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._idle_workers.append(future)
        try:
            # asyncio.timeout, not wait_for: it never loses a cancellation.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await future
        finally:
            self._idle_workers.remove(future)

    # -- workers ---------------------------------------------------------------

    async def _work(self, name: str) -> None:
        # The flag backs up cancellation: Python 3.11's asyncio.wait_for (used
        # under BlockingRunner.run) can swallow a cancel that races with its
        # result, and a worker that missed it must still leave on ``stop``.
        # The subject of the delivery this worker just finished stays busy until
        # its next claim: otherwise, in that window, idle workers woken by new
        # deliveries of the same subject would scan the whole queue in vain.
        # A worker's turn is one store call: how its last attempt ended, then its
        # next claim; an end the store has not taken yet is kept for the next try.
        # After store errors in a row a worker pauses longer each time; an outage is
        # one line for the whole process (``Store.outage``), not one per worker.
        held: str | None = None
        ended: AttemptEnd | None = None
        failures = 0
        while not self._stopping:
            try:
                now = self._clock()
                busy = self._busy - {held} if held is not None else self._busy
                settled = None if ended is None else ended.settlement
                delivery = await self._store.settle_and_claim(settled, now, frozenset(busy))
                failures = 0
                self._store.outage.answered()
                if ended is not None:
                    self._recorded(ended)
                    ended = None
                if held is not None and (delivery is None or delivery.subject != held):
                    self._busy.discard(held)
                    if delivery is not None:
                        self._ring()  # the released subject may have more work
                    held = None
                if delivery is None:
                    timeout = await self._idle_timeout(now)
                else:
                    # No ring for other workers here: each new delivery rings
                    # one, busy workers claim again when they finish, and idle
                    # ones wake for retries on their own timers.
                    ended = await self._process(self._with_parsed(delivery))
                    held = delivery.subject
                    continue
            except UnknownDelivery:
                # Its delivery was deleted under it (an operator's prune): nothing to end.
                logger.warning(LOG_VANISHED, ended.delivery.delivery_id if ended else "?")
                ended = None
                timeout = 0.0
            except Exception as exc:  # a pause that grows with each error in a row
                failures += 1
                timeout = self._after_store_error(name, exc, failures)
                if held is not None and ended is None:
                    self._busy.discard(held)
                    held = None
            await self._wait_for_ring(timeout)
        if ended is not None:
            await self._record_on_the_way_out(ended)

    def _after_store_error(self, name: str, exc: Exception, failures: int) -> float:
        if not self._store.outage.failed(exc):
            logger.exception(LOG_WORKER_ERROR, name)
        return pause(failures, self._rng())

    async def _record_on_the_way_out(self, ended: AttemptEnd) -> None:
        # Stopped between an attempt and the turn that records it (a stop whose
        # cancellation was lost): record it now, or the next start runs it again.
        try:
            await self._store.settle_and_claim(
                ended.settlement, self._clock(), frozenset(), claim=False
            )
        except Exception:
            logger.warning(LOG_NOT_RECORDED, ended.delivery.delivery_id, exc_info=True)
        else:
            self._recorded(ended)

    def _with_parsed(self, delivery: Delivery) -> Delivery:
        parsed = self._parsed.pop(delivery.delivery_id, None)
        return delivery if parsed is None else dataclasses.replace(delivery, parsed=parsed)

    def _remember_parsed(self, delivery: Delivery) -> None:
        # Only deliveries a worker of this process will run; bounded, because a
        # delivery claimed elsewhere (or never) would otherwise stay here for good.
        if delivery.parsed is None:
            return
        self._parsed[delivery.delivery_id] = delivery.parsed
        while len(self._parsed) > PARSED_KEPT:
            self._parsed.popitem(last=False)

    def _recorded(self, ended: AttemptEnd) -> None:
        """The store has ``ended``: log and count it, and tell ``wait_idle`` something moved."""
        delivery = ended.delivery
        self._metrics.delivery(delivery.source, delivery.event, ENDED[ended.settlement.status])
        with attempt_logged(delivery):
            self._log(delivery, ended.result, level=ended.level, cause=ended.cause)
        self._signal()

    async def _idle_timeout(self, claimed_at: float) -> float:
        """How long to sleep when nothing could be claimed at ``claimed_at``.

        At most ``poll_interval``, for work other processes queue. A delivery
        that was already due then was skipped because its subject is busy: the
        end of that run will signal, so no earlier timeout (a zero one would
        spin). Otherwise wake when the earliest retry falls due.
        """
        due = await self._store.next_due()
        if due is None or due <= claimed_at:
            return self._poll_interval
        return min(max(due - self._clock(), 0.0), self._poll_interval)

    async def _process(self, delivery: Delivery) -> AttemptEnd:
        """Run one attempt; how it ended, for the worker's next turn to record."""
        self._busy.add(delivery.subject)
        self._running.add(delivery.subject)
        try:
            with attempt_logged(delivery):
                return await self._attempt(delivery)
        finally:
            # The subject stays in _busy: the worker releases it at its next claim.
            self._running.discard(delivery.subject)

    async def _attempt(self, delivery: Delivery) -> AttemptEnd:
        if delivery.attempts > self._policy.max_attempts:
            # Only reachable when earlier attempts died with the process:
            # a delivery that keeps crashing the bot must not loop forever.
            return gave_up(delivery)
        try:
            completed = await self._dispatch(delivery)
        except Exception as exc:
            return after_failure(delivery, exc, self._policy, self._clock(), self._rng())
        return done(delivery, completed or ())

    def _log(
        self, delivery: Delivery, result: str, level: int, cause: BaseException | None
    ) -> None:
        shown = (delivery.delivery_id, delivery.event, delivery.subject, delivery.attempts)
        logger.log(level, LOG_OUTCOME, *shown, result, exc_info=cause)
