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

from bot.store.protocol import PruneCounts, Store

log = logging.getLogger(__name__)

DAY = 86400.0
RETENTION_INTERVAL = 3600.0  # seconds between two prunes

LOG_PRUNED = (
    "retention: pruned %d deliveries, %d handler runs and %d state documents"
    " older than %g days in %d batches"
)
LOG_PRUNE_FAILED = "retention: pruning failed; trying again in %g seconds"

# The only state kinds retention may delete. Each is a record of one command,
# one event or one posted comment, written when it is handled and read only
# when that same command, event or PR comes back; the comment before each
# names the constant of the module writing it.
PRUNABLE_KINDS: frozenset[str] = frozenset(
    {
        # retry_flow.COMMAND_KIND: "this command comment was handled". Guards a
        # redelivered issue_comment, which does not come a month later.
        "retry-command",
        # retry_flow.JOB_KIND: a job the bot retried and how the retry ended,
        # filled in by the job.finished webhook minutes later. Also the audit
        # trail of the dashboard and of `report flaky`, which thus cover the
        # retention window.
        "retry-job",
        # retry_flow.STEP_KIND: retries per step of one build, for the
        # per-step cap. Nobody retries a build a month after its last retry.
        "retry-step",
        # retry_flow.PLAN_KIND: what a retry-flaky command is about to do, deleted
        # once it is done; one left behind belongs to a command whose delivery
        # gave up long ago.
        "retry-plan",
        # retry_flow.STICKY_KIND: a PR's one retry comment, edited in place.
        # After a quiet month a new command posts a fresh comment instead.
        "retry-pr",
        # effects.COMMENT_KIND: a comment the bot posted (or was posting), keyed
        # by its hidden marker: a command's comment id, a review id, a head sha,
        # a job id. Read when the same delivery, or a redelivery, wants that
        # comment again; a month later neither happens, and a record still
        # "pending" then belongs to a delivery that finished long ago.
        "posted-comment",
        # The one-reply records that "posted-comment" replaced (the reply to a
        # command comment, the refusal of a review, the allowlist evidence
        # comment): no longer written or read, so old rows only wait to go.
        "command-reply",
        "landing-reply",
        "allowlist-comment",
    }
)


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

    A failed prune (a locked or full disk, a timeout) is logged and tried again
    at the next interval: nothing is lost by pruning late.
    """
    while True:
        try:
            await prune_once(store, retention_days, clock)
        except Exception:
            log.exception(LOG_PRUNE_FAILED, interval)
        await sleep(interval)


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
