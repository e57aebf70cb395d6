"""Work a handler hands back to the inbox instead of doing it in line.

An upstream push concerns every repository that pins that upstream. Syncing
them all inside the push's own handler would tie their fates together: one
repository's permanent failure (or its retries running out) would stop the
rest. Instead the handler submits one internal delivery per repository; each
is retried, failed and serialised on its own. Their ids derive from the parent
delivery, so a rerun of the parent submits nothing new.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from bot.service.sources import SYNC_EVENT, Source
from bot.service.subjects import github_subject
from bot.store.protocol import Delivery

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
