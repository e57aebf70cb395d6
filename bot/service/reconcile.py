"""The periodic reconcile tick: level-triggered healing of missed webhooks.

Each tick puts one internal delivery per configured repository into the same
inbox as webhooks, so it is retried, deduplicated and serialised the same way.
The delivery id names the tick's time bucket, so a restart within one interval
does not enqueue the same tick twice.

A tick that cannot be made (the database away, the reconcile lock not answered)
is tried again after a short pause that grows with each failure in a row, never
a whole interval later; an outage is the store's one line (``Store.outage``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from bot.core.sources import RECONCILE_EVENT
from bot.core.subjects import github_subject
from bot.store.outage import Outage, pause
from bot.store.protocol import Delivery

log = logging.getLogger(__name__)


class Submitter(Protocol):
    """What a tick needs of the inbox: ``submit``, and the store's ``Outage`` to report
    a database that is away to."""

    @property
    def outage(self) -> Outage: ...

    async def submit(self, delivery: Delivery) -> bool: ...


def reconcile_delivery(repository: str, now: float, interval: float) -> Delivery:
    payload = {"repository": {"full_name": repository}}
    bucket = int(now // interval) if interval > 0 else int(now)
    return Delivery(
        delivery_id=f"reconcile:{repository}:{bucket}",
        source="internal",
        event=RECONCILE_EVENT,
        payload=json.dumps(payload).encode(),
        subject=github_subject(RECONCILE_EVENT, payload),
        received_at=now,
    )


async def enqueue_tick(
    inbox: Submitter, repositories: Sequence[str], now: float, interval: float
) -> int:
    """Enqueue one tick; returns how many deliveries were new."""
    added = 0
    for repository in repositories:
        if await inbox.submit(reconcile_delivery(repository, now, interval)):
            added += 1
    return added


async def reconcile_forever(
    inbox: Submitter,
    repositories: Sequence[str],
    interval: float,
    clock: Callable[[], float],
    leader: Callable[[], Awaitable[bool]] | None = None,
    *,
    rand: Callable[[], float] = random.random,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Tick every ``interval`` seconds until cancelled (the app's cleanup_ctx owns the task).

    With ``leader`` (replicas on one database), only the replica holding the reconcile
    lock ticks; the ids are per interval anyway, so two ticks would add nothing twice,
    but the others need not try. A replica that dies frees the lock for the next one.
    A failed try (the lock or the inbox's store away) is tried again soon, in the same
    interval: the tick's id names the interval, so a late tick is still the same tick.
    """
    failures = 0
    while True:
        try:
            if leader is None or await leader():
                added = await enqueue_tick(inbox, repositories, clock(), interval)
                log.info(LOG_TICKED, added, len(repositories))
        except Exception as exc:
            failures += 1
            if not inbox.outage.failed(exc):
                log.warning(LOG_TICK_FAILED, exc_info=True)
            wait = min(interval, pause(failures, rand()))
        else:
            failures = 0
            wait = interval
        await sleep(wait)


RECONCILE_LOCK = "reconcile"
LOG_TICKED = "reconcile tick: %d of %d repositories enqueued"
LOG_TICK_FAILED = "could not make the reconcile tick (its lock or the inbox); trying again soon"
