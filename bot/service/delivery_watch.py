"""What the inbox says about each delivery besides running it: the log fields an
attempt's lines carry and the outcome each delivery is counted under."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from bot.service import log_context
from bot.service import metrics as outcomes
from bot.store.protocol import Delivery, DeliveryStatus, EnqueueResult

# How each stored end of an attempt is counted, and each intake answer.
ENDED = {
    DeliveryStatus.DONE: outcomes.DONE,
    DeliveryStatus.QUEUED: outcomes.RETRY,
    DeliveryStatus.FAILED: outcomes.FAILED,
}
ADMITTED = {
    EnqueueResult.NEW: outcomes.ACCEPTED,
    EnqueueResult.REQUEUED: outcomes.REQUEUED,
    EnqueueResult.DUPLICATE: outcomes.DUPLICATE,
}


def repository_of(delivery: Delivery) -> str | None:
    """The ``owner/name`` a parsed GitHub-shaped payload is about, for the log."""
    repository = (delivery.parsed or {}).get("repository")
    name = repository.get("full_name") if isinstance(repository, Mapping) else None
    return name if isinstance(name, str) else None


@contextlib.contextmanager
def attempt_logged(delivery: Delivery) -> Iterator[None]:
    """Every line logged within the block names the delivery and its attempt."""
    with log_context.bound(
        delivery_id=delivery.delivery_id,
        event=delivery.event,
        repository=repository_of(delivery),
        attempt=delivery.attempts,
    ):
        yield
