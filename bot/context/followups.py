"""Work a handler hands back to the inbox instead of doing it in line.

An upstream push concerns every repository that pins that upstream. Syncing
them all inside the push's own handler would tie their fates together: one
repository's permanent failure (or its retries running out) would stop the
rest. Instead the handler submits one internal delivery per repository; each
is retried, failed and serialised on its own. Their ids derive from the parent
delivery, so a rerun of the parent submits nothing new.

Work on one PR that an event of another subject brings (a retried job's
``job.finished`` refreshing the PR's retry-flaky sticky comment; a status, check run,
finished build or reconcile tick moving a landing along) is handed over the same way,
under the PR's own subject (`pr_delivery`): the one its comment commands and reviews
run under. So every writer of the PR's comments and state runs in one order, on
whichever replica claims it: a lock per process could not give that across replicas.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from bot.core.sources import INTERNAL_PREFIX, SYNC_EVENT, Source
from bot.core.subjects import github_subject
from bot.store.protocol import Delivery

# A PR's retry-flaky sticky comment shown again with its retried jobs' outcomes.
RETRY_OUTCOMES_EVENT = INTERNAL_PREFIX + "retry-outcomes"
# A landing moved along: advanced, or told of a finished build of the PR.
LANDING_EVENT = INTERNAL_PREFIX + "landing"

NOT_ATTACHED = "follow-up work was submitted before the inbox was attached"


class Submitter(Protocol):
    async def submit(self, delivery: Delivery) -> bool: ...


class FollowUps:
    """The inbox, as handlers see it: attached once the app has built it."""

    def __init__(self) -> None:
        self._inbox: Submitter | None = None

    def attach(self, inbox: Submitter) -> None:
        self._inbox = inbox

    async def submit(self, delivery: Delivery) -> bool:
        if self._inbox is None:
            raise RuntimeError(NOT_ATTACHED)
        return await self._inbox.submit(delivery)


def sync_delivery(
    parent_id: str, repository: str, select: Mapping[str, Any], now: float
) -> Delivery:
    """One repository's share of ``parent_id``: sync the pins ``select`` names."""
    payload = {"repository": {"full_name": repository}, "select": dict(select)}
    return Delivery(
        delivery_id=f"{parent_id}/sync/{repository.lower()}",
        source=Source.INTERNAL,
        event=SYNC_EVENT,
        payload=json.dumps(payload, sort_keys=True).encode(),
        subject=github_subject(SYNC_EVENT, payload),
        received_at=now,
    )


def pr_delivery(
    delivery_id: str,
    event: str,
    repository: str,
    number: int,
    now: float,
    extra: Mapping[str, Any] | None = None,
) -> Delivery:
    """Work on PR ``number`` of ``repository``, under the PR's subject (see above);
    ``extra`` adds fields of the payload (what the work is about)."""
    payload = {
        **(extra or {}),
        "repository": {"full_name": repository},
        "pull_request": {"number": number},
    }
    return Delivery(
        delivery_id=delivery_id,
        source=Source.INTERNAL,
        event=event,
        payload=json.dumps(payload, sort_keys=True).encode(),
        subject=github_subject(event, payload),
        received_at=now,
    )
