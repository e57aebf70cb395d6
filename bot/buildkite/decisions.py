"""Buildkite's HTTP conventions as pure decisions, tested on their own: query strings
with repeated keys, ``Link`` pagination, how long a 429 waits, whether an answer is
tried again, and the error a final answer turns into.

A 429 carries no ``Retry-After``: the wait comes from ``RateLimit-Reset`` (seconds
until the window resets) or the body's ``reset``.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping

from bot.buildkite.errors import BuildkiteError
from bot.core.errors import BotError, TransientError
from bot.core.http_policy import RequestPolicy, header, parse_seconds, server_side

SERVICE = "Buildkite"
# Buildkite's rate-limit windows last a minute; a 429 that names no reset is
# assumed to last one whole window.
UNSPECIFIED_RESET = 60.0
# A "reset" above this is an epoch timestamp rather than a number of seconds.
EPOCH_THRESHOLD = 1e9
RATE_LIMIT_HEADERS = ("ratelimit-reset", "ratelimit-user-reset")

SERVER_ERROR = "Buildkite answered {status} to {request}"
BAD_ARGUMENT = "{name} must be {rule}, got {value!r}"


def encode_query(pairs: Iterable[tuple[str, str]]) -> str:
    """``k=v&...`` keeping repeated keys and literal ``[]`` (``state[]=a&state[]=b``)."""
    return "&".join(
        f"{urllib.parse.quote(key, safe='[]')}={urllib.parse.quote(value, safe='')}"
        for key, value in pairs
    )


_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,]*)*)")
_REL = re.compile(r"""rel\s*=\s*"?([^";]*)"?""", re.IGNORECASE)


def next_link(link: str | None) -> str | None:
    """The ``rel="next"`` target of an RFC 8288 ``Link`` header, if any."""
    for match in _LINK.finditer(link or ""):
        rel = _REL.search(match.group(2))
        if rel is not None and "next" in rel.group(1).lower().split():
            return match.group(1)
    return None


def _seconds_until(value: object, now: float) -> float | None:
    """A reset given as seconds from now (or, if huge, as an epoch time) → seconds."""
    seconds = parse_seconds(value)
    if seconds is None:
        return None
    if seconds > EPOCH_THRESHOLD:
        seconds -= now
    return max(0.0, seconds)


def _body_field(body: bytes, name: str) -> object:
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return parsed.get(name) if isinstance(parsed, dict) else None


def rate_limit_wait(headers: Mapping[str, str], body: bytes, *, now: float) -> float:
    """Seconds until a 429's rate-limit window resets.

    Both the organisation's and the token's reset may be present; the request
    can only pass once the later of the two has reset.
    """
    resets = [_seconds_until(header(headers, name), now) for name in RATE_LIMIT_HEADERS]
    known = [reset for reset in resets if reset is not None]
    if known:
        return max(known)
    from_body = _seconds_until(_body_field(body, "reset"), now)
    return from_body if from_body is not None else UNSPECIFIED_RESET


def retry_delay(
    policy: RequestPolicy,
    *,
    request: str,
    status: int,
    idempotent: bool,
    attempt: int,
    headers: Mapping[str, str],
    body: bytes,
    now: float,
) -> float | None:
    """Seconds to wait before trying again, or None to fail with this answer.

    A 429 means the request was not processed, so it is retried whatever the
    method; a rate limit that lasts past ``max_wait`` or ``max_retries``
    raises ``TransientError`` carrying ``retry_after``.
    """
    if status == 429:
        wait = rate_limit_wait(headers, body, now=now)
        return policy.rate_limit_delay(
            service=SERVICE, request=request, attempt=attempt, retry_after=wait
        )
    if server_side(status) and idempotent:
        return policy.backoff(attempt)
    return None


def error_message(body: bytes) -> str:
    """Buildkite's ``message`` from an error body, or the start of the body itself."""
    message = _body_field(body, "message")
    if isinstance(message, str) and message:
        return message
    text = body[:200].decode("utf-8", errors="replace").strip()
    return text or "(no message)"


def status_error(status: int, body: bytes, *, request: str) -> BotError:
    """The error a final non-2xx answer turns into."""
    if server_side(status):
        return TransientError(SERVER_ERROR.format(status=status, request=request))
    return BuildkiteError(status, error_message(body), request=request)


def without_query(url: str) -> str:
    """``url`` without its query: a signed download URL carries its credentials there."""
    return url.split("?", 1)[0]


def describe(method: str, url: str) -> str:
    """A request as errors and logs name it, credentials left out."""
    return f"{method} {without_query(url)}"


def check(name: str, value: int, low: int, high: int | None = None) -> None:
    """``ValueError`` unless ``low <= value`` (and ``value <= high``, if given)."""
    if value < low or (high is not None and value > high):
        rule = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ValueError(BAD_ARGUMENT.format(name=name, rule=rule, value=value))
