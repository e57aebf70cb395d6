"""How one attempt at a delivery ended: done, retried later or failed for good.

Pure: the inbox records the ``Settlement`` in its worker's next store turn and,
once the store has it, logs ``result``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection

from bot.core.errors import bug_of, is_transient, retry_after
from bot.core.http_policy import exponential_backoff
from bot.store.protocol import Delivery, DeliveryStatus, Settlement

RESULT_DONE = "done"
RESULT_RETRY = "retry in %.1fs after %s"
RESULT_FAILED = "failed: %s"
GAVE_UP = "gave up after {attempts} attempts; the last one never finished (crash or shutdown)"


def backoff_delay(attempt: int, base: float, cap: float, rand: float) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^(attempt-1))].

    ``rand`` is a number in [0, 1) so callers (and tests) choose the randomness.
    """
    return exponential_backoff(attempt, base=base, cap=cap, jitter=rand)


def failure_reason(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@dataclasses.dataclass(frozen=True)
class AttemptEnd:
    """An attempt's end, not yet in the store, with the line to log once it is."""

    delivery: Delivery
    settlement: Settlement
    result: str
    level: int = logging.INFO
    cause: BaseException | None = None


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int
    backoff_base: float
    backoff_max: float


def done(delivery: Delivery, completed: Collection[str]) -> AttemptEnd:
    finished = Settlement(delivery.delivery_id, DeliveryStatus.DONE, tuple(completed))
    return AttemptEnd(delivery, finished, RESULT_DONE)


def gave_up(delivery: Delivery) -> AttemptEnd:
    return failed(delivery, GAVE_UP.format(attempts=delivery.attempts - 1))


def after_failure(
    delivery: Delivery, exc: Exception, policy: RetryPolicy, now: float, rand: float
) -> AttemptEnd:
    """Retry a transient failure with backoff (or when asked), while attempts remain."""
    reason = failure_reason(exc)
    if not is_transient(exc) or delivery.attempts >= policy.max_attempts:
        # A refusal made on purpose is its reason, one line; a bug adds its traceback.
        return failed(delivery, reason, bug_of(exc))
    requested = retry_after(exc)
    delay = (
        max(requested, 0.0)
        if requested is not None
        else backoff_delay(delivery.attempts, policy.backoff_base, policy.backoff_max, rand)
    )
    retry = Settlement(
        delivery.delivery_id, DeliveryStatus.QUEUED, retry_at=now + delay, reason=reason
    )
    return AttemptEnd(delivery, retry, RESULT_RETRY % (delay, reason))


def failed(delivery: Delivery, reason: str, cause: BaseException | None = None) -> AttemptEnd:
    # The one traceback of a delivery: a bug's, once, when the bot gives up.
    end = Settlement(delivery.delivery_id, DeliveryStatus.FAILED, reason=reason)
    return AttemptEnd(delivery, end, RESULT_FAILED % reason, logging.WARNING, cause)
