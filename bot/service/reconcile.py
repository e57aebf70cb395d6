"""The periodic reconcile tick: level-triggered healing of missed webhooks.

Each tick puts one internal delivery per configured repository into the same
inbox as webhooks, so it is retried, deduplicated and serialised the same way.
The delivery id names the tick's time bucket, so a restart within one interval
does not enqueue the same tick twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from bot.service.sources import RECONCILE_EVENT
from bot.service.subjects import github_subject
from bot.store.protocol import Delivery

log = logging.getLogger(__name__)


class Submitter(Protocol):
    """What a tick needs of the inbox."""

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
) -> None:
    """Tick every ``interval`` seconds until cancelled (the app's cleanup_ctx owns the task).

    With ``leader`` (replicas on one database), only the replica holding the reconcile
    lock ticks; the ids are per interval anyway, so two ticks would add nothing twice,
    but the others need not try. A replica that dies frees the lock for the next one.
    """
    while True:
        if leader is None or await _leads(leader):
            added = await enqueue_tick(inbox, repositories, clock(), interval)
            log.info("reconcile tick: %d of %d repositories enqueued", added, len(repositories))
        await asyncio.sleep(interval)


async def _leads(leader: Callable[[], Awaitable[bool]]) -> bool:
    try:
        return await leader()
    except Exception:
        # The database is away: no tick now; the next interval asks again.
        log.warning(LOG_NO_LEADER, exc_info=True)
        return False


RECONCILE_LOCK = "reconcile"
LOG_NO_LEADER = "could not ask the database which replica ticks; skipping this tick"
