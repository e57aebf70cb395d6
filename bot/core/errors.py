"""Failure classes that decide what the inbox does with a failed delivery.

A *transient* failure (GitHub 5xx, a rate limit, a timeout, a dropped
connection) is retried later with backoff; anything else is *permanent* and
recorded with its reason so a human can see why nothing happened. A database
that cannot be reached, or asks for the transaction to be tried again, is transient
too (``bot.core.database_errors``): an outage delays deliveries, it fails none.

A failure the bot raises on purpose (a ``BotError``: a payload field of the wrong
type, an event nobody handles) is its reason alone, logged in one line; only a
failure nobody foresaw (a bug) is worth its traceback (``bug_of``).
"""

from __future__ import annotations

import asyncio

import aiohttp
import gidgethub

from bot.core.database_errors import transient_database_error


class BotError(Exception):
    """Base class for the bot's own errors.

    ``bug``: an unforeseen exception this error carries (one handler's bug among
    several handlers' failures), whose traceback is logged when the delivery fails.
    Not ``__cause__``: a ``raise BotError(...) from exc`` names the detail of a
    refusal made on purpose, which is no bug.
    """

    bug: BaseException | None = None


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
    if isinstance(exc, aiohttp.ClientError | asyncio.TimeoutError | ConnectionError):
        return True
    return transient_database_error(exc)


def unforeseen(exc: BaseException) -> bool:
    """A failure the bot has no words for (a bug, most likely): worth its traceback."""
    return (
        not isinstance(exc, BotError)
        and not is_transient(exc)
        and not isinstance(exc, gidgethub.HTTPException)
    )


def bug_of(exc: BaseException) -> BaseException | None:
    """The exception whose traceback the log should show for ``exc``: itself when it is
    a bug, the bug a ``BotError`` carries, else None (a failure refused on purpose)."""
    if unforeseen(exc):
        return exc
    return exc.bug if isinstance(exc, BotError) else None


def retry_after(exc: BaseException) -> float | None:
    """The delay the peer asked for, if any."""
    return exc.retry_after if isinstance(exc, TransientError) else None
