"""How the bot's HTTP clients wait, retry and give up: one policy for GitHub and Buildkite.

Every request is bounded by ``timeout``. A request the peer failed on its own
side (a 5xx or a 408), or that got no answer at all, is retried in place after
a capped exponential backoff, at most ``max_retries`` times, and only where the
caller says a repeat is harmless. A rate limit is waited out when the peer's
wait is at most ``max_wait`` and retries remain; otherwise it becomes a
``TransientError`` carrying ``retry_after``, so the inbox reschedules the
delivery instead of a worker sleeping through it.

Every wait goes through the policy's ``sleep`` and every reading of the time
through its ``clock``, so tests neither sleep nor depend on the real time.

Part of the foundation (see docs/architecture.md): it imports nothing of the
bot but ``bot.core.errors``, and ``bot.github`` and ``bot.buildkite`` build
on it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import aiohttp

from bot.core.errors import TransientError

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 4
DEFAULT_MAX_WAIT = 90.0
# The first retry after a server error or a dropped connection waits this long,
# each further one twice as long, none longer than the cap.
SERVER_ERROR_BACKOFF = 1.0
SERVER_ERROR_BACKOFF_CAP = 8.0
BACKOFF_CAP_FACTOR = SERVER_ERROR_BACKOFF_CAP / SERVER_ERROR_BACKOFF
# 2.0 ** 1024 overflows a float; beyond this the cap has long been reached.
_MAX_EXPONENT = 1023
# No answer at all: the connection failed, dropped, or timed out.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (TimeoutError, aiohttp.ClientError)
# Told of every answer a client gets: (service, status, headers). The metrics use it;
# a callable, so this foundation module needs nothing of theirs.
ResponseObserver = Callable[[str, int, Mapping[str, str]], None]

RATE_LIMITED = "{service} rate limit on {request}: retry in {retry_after:.0f} s"
# DEBUG: a request's own retries are detail; the inbox's one line per failed
# attempt is what an operator reads (an outage must not flood the log).
RETRYING = "%s answered %s to %s (attempt %d); retrying in %.1f s"


def exponential_backoff(
    attempt: int,
    *,
    base: float = SERVER_ERROR_BACKOFF,
    cap: float = SERVER_ERROR_BACKOFF_CAP,
    jitter: float = 1.0,
) -> float:
    """The delay after failed attempt ``attempt`` (1-based): ``min(cap, base * 2^(attempt-1))``.

    ``jitter`` scales it: a number in [0, 1] the caller draws (uniformly, for
    full jitter) so callers and tests choose the randomness; 1.0 is none.
    Never negative, never above ``cap`` (for ``jitter`` in [0, 1]).
    """
    exponent = min(max(attempt - 1, 0), _MAX_EXPONENT)
    ceiling = min(cap, base * 2.0**exponent)
    return max(ceiling, 0.0) * jitter


def server_side(status: int) -> bool:
    """Whether an answer says the peer failed on its side (5xx) or gave up waiting (408)."""
    return status >= 500 or status == 408


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value, whatever the case of its name.

    Tests and exceptions may carry a plain dict rather than aiohttp's
    case-insensitive one.
    """
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def parse_seconds(value: object) -> float | None:
    """A finite number of seconds from a header or JSON value, or None.

    Booleans, non-numbers, unparseable text, NaN and infinities are None: a
    wait nobody can sleep through is no wait at all.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) else None


def origin(url: str) -> tuple[str, str]:
    """(scheme, host[:port]) of ``url``, lower-cased: credentials go to their own origin only.

    Pagination links, GraphQL endpoints and redirects are absolute URLs that
    may lead elsewhere (a signed storage URL must not see an API token).
    """
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


@dataclass(frozen=True, kw_only=True)
class RequestPolicy:
    """How long to wait for a peer, how patiently to retry it, and how to sleep meanwhile."""

    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    max_wait: float = DEFAULT_MAX_WAIT
    backoff_base: float = SERVER_ERROR_BACKOFF
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    observe: ResponseObserver | None = None

    def seen(self, service: str, status: int, headers: Mapping[str, str]) -> None:
        """Tell the observer (if any) of one answer, retries included."""
        if self.observe is not None:
            self.observe(service, status, headers)

    def client_timeout(self) -> aiohttp.ClientTimeout:
        """One request, answer and body, within ``timeout``."""
        return aiohttp.ClientTimeout(total=self.timeout)

    def stream_timeout(self) -> aiohttp.ClientTimeout:
        """A download that may rightly take longer: ``timeout`` bounds each wait instead."""
        return aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=self.timeout)

    def backoff(self, attempt: int) -> float | None:
        """Delay before retrying after failed attempt ``attempt``, or None when retries are spent.

        For a server error or no answer at all, on a request that is safe to repeat.
        """
        if attempt > self.max_retries:
            return None
        return exponential_backoff(
            attempt, base=self.backoff_base, cap=self.backoff_base * BACKOFF_CAP_FACTOR
        )

    def rate_limit_delay(
        self,
        *,
        service: str,
        request: str,
        attempt: int,
        retry_after: float,
        sleep_for: float | None = None,
        cause: BaseException | None = None,
    ) -> float:
        """Seconds to sleep before retrying a rate-limited attempt.

        That is ``sleep_for`` when given (a margin over the peer's word), else
        ``retry_after``.

        Raises ``TransientError`` carrying ``retry_after`` (from ``cause``) when
        the wait exceeds ``max_wait`` or the limit persists beyond ``max_retries``.
        """
        if attempt > self.max_retries or retry_after > self.max_wait:
            message = RATE_LIMITED.format(service=service, request=request, retry_after=retry_after)
            raise TransientError(message, retry_after=retry_after) from cause
        return retry_after if sleep_for is None else sleep_for

    async def pause(
        self, delay: float, *, service: str, answer: object, request: str, attempt: int
    ) -> None:
        """Log the retry (at DEBUG) and sleep ``delay`` seconds through ``sleep``."""
        logger.debug(RETRYING, service, answer, request, attempt, delay)
        await self.sleep(delay)
