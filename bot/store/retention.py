"""Retention: forget finished work once it is older than the retention age.

Every delivery keeps its raw payload, and every command leaves a small record
that makes its side effects idempotent; without pruning the database grows by
about 13 KB per delivery forever. A background task (owned by the app's
``cleanup_ctx``) prunes at start-up and then every ``RETENTION_INTERVAL``:

- DONE and FAILED deliveries that finished before the cutoff, with their
  handler runs. QUEUED and RUNNING ones are open work and are never touched.
- State documents of the kinds in ``PRUNABLE_KINDS`` last written before the
  cutoff. Every other kind describes something still alive (a pin, a pause, a
  repository's config, a dashboard issue, a PR being landed) and is kept.

Forgetting a record only matters if the event it guards comes back. GitHub
redelivers a webhook only within a few days of the original, and reconcile
ticks re-read live state, which is never pruned: no event older than the
retention age (30 days by default) is expected again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from bot.store import kinds
from bot.store.protocol import PruneCounts, Store

log = logging.getLogger(__name__)

DAY = 86400.0
RETENTION_INTERVAL = 3600.0  # seconds between two prunes

LOG_PRUNED = (
    "retention: pruned %d deliveries, %d handler runs and %d state documents"
    " older than %g days in %d batches"
)
LOG_PRUNE_FAILED = "retention: pruning failed; trying again in %g seconds"

# The only state kinds retention may delete, each with the reason: bot.store.kinds.
PRUNABLE_KINDS = kinds.PRUNABLE_KINDS


async def prune_once(
    store: Store, retention_days: float, clock: Callable[[], float]
) -> PruneCounts:
    """Prune everything older than ``retention_days`` and log one line with the counts."""
    counts = await store.prune(clock() - retention_days * DAY, PRUNABLE_KINDS)
    log.info(
        LOG_PRUNED,
        counts.deliveries,
        counts.handler_runs,
        counts.states,
        retention_days,
        counts.batches,
    )
    return counts


async def prune_forever(
    store: Store,
    retention_days: float,
    clock: Callable[[], float],
    *,
    interval: float = RETENTION_INTERVAL,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Prune now, then every ``interval`` seconds, until cancelled.

    A failed prune (a locked or full disk, a timeout) is tried again at the next
    interval: nothing is lost by pruning late. A database that is away is the store's
    one outage line (``Store.outage``); any other failure is logged with its traceback.
    """
    while True:
        try:
            # Replicas on one database: one of them prunes (the others would find nothing).
            if await store.try_lock(RETENTION_LOCK):
                await prune_once(store, retention_days, clock)
        except Exception as exc:
            if not store.outage.failed(exc):
                log.exception(LOG_PRUNE_FAILED, interval)
        await sleep(interval)


RETENTION_LOCK = "retention"


def start_retention(
    store: Store, retention_days: float, clock: Callable[[], float]
) -> asyncio.Task[None]:
    """The app's retention task; the caller must ``stop_retention`` it."""
    return asyncio.create_task(prune_forever(store, retention_days, clock), name="retention")


async def stop_retention(task: asyncio.Task[None]) -> None:
    """Cancel the task and wait until it has stopped (a batch in flight still commits)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
