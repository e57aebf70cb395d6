"""Failure classes that decide what the inbox does with a failed delivery.

A *transient* failure (GitHub 5xx, a rate limit, a timeout, a dropped
connection) is retried later with backoff; anything else is *permanent* and
recorded with its reason so a human can see why nothing happened.
"""

from __future__ import annotations

import asyncio

import aiohttp
import gidgethub


class BotError(Exception):
    """Base class for the bot's own errors."""


class TransientError(BotError):
    """Worth trying again later; ``retry_after`` (seconds) when the peer said so."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(BotError):
    """Will fail the same way if tried again: record the reason, do not retry."""


_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is worth retrying with backoff."""
    if isinstance(exc, TransientError):
        return True
    if isinstance(exc, PermanentError):
        return False
    if isinstance(exc, gidgethub.RateLimitExceeded | gidgethub.GitHubBroken):
        return True
    if isinstance(exc, gidgethub.HTTPException):
        return int(exc.status_code) in _TRANSIENT_STATUS
    return isinstance(exc, aiohttp.ClientError | asyncio.TimeoutError | ConnectionError)


def unforeseen(exc: BaseException) -> bool:
    """A failure the bot has no words for (a bug, most likely): worth its traceback."""
    return (
        not isinstance(exc, BotError)
        and not is_transient(exc)
        and not isinstance(exc, gidgethub.HTTPException)
    )


def retry_after(exc: BaseException) -> float | None:
    """The delay the peer asked for, if any."""
    return exc.retry_after if isinstance(exc, TransientError) else None
