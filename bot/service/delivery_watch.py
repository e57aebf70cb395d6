"""What the inbox says about each delivery besides running it: the log fields an
attempt's lines carry and the outcome each delivery is counted under."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

from bot.buildkite.pipelines import repository_of as pipeline_repository
from bot.core import log_context
from bot.core import metrics as outcomes
from bot.core.sources import Source
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


# A delivery this process did not take in is parsed again for its log lines' repository
# only up to this size: a larger one is left for the dispatcher to parse (and name).
LOG_PARSE_LIMIT = 256 * 1024


def payload_repository(source: str, payload: Mapping[str, Any]) -> str | None:
    """The ``owner/name`` a payload is about: a GitHub or internal one's repository, a
    Buildkite one's pipeline's repository (from its git URL, as the handlers read it)."""
    if source == Source.BUILDKITE:
        pipeline = payload.get("pipeline")
        url = pipeline.get("repository") if isinstance(pipeline, Mapping) else None
        return pipeline_repository(url) if isinstance(url, str) else None
    repository = payload.get("repository")
    name = repository.get("full_name") if isinstance(repository, Mapping) else None
    return name if isinstance(name, str) else None


def repository_of(delivery: Delivery) -> str | None:
    """The ``owner/name`` a delivery is about, for the log."""
    if delivery.parsed is not None:
        return payload_repository(delivery.source, delivery.parsed)
    if len(delivery.payload) > LOG_PARSE_LIMIT:
        return None
    return _stored_repository(delivery.source, delivery.payload)


# An attempt's lines and its outcome line ask about the same stored body: parsed once.
@functools.lru_cache(maxsize=64)
def _stored_repository(source: str, payload: bytes) -> str | None:
    try:
        parsed = json.loads(payload)
    except (ValueError, RecursionError):  # refused by the dispatcher, which says why
        return None
    return payload_repository(source, parsed) if isinstance(parsed, Mapping) else None


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
