"""Buildkite REST v2 access: a small async client on the app's one session.

Every request is bounded by a timeout. Reads (GET) are retried a bounded
number of times on 5xx answers and dropped connections; the job retry (PUT)
never is, since a 5xx does not prove Buildkite did not retry the job. A 429
carries no ``Retry-After``: the wait comes from ``RateLimit-Reset`` (seconds
until the window resets) or the body's ``reset``; a wait longer than
``max_wait`` becomes a ``TransientError`` with ``retry_after`` so the inbox
reschedules the delivery instead of a worker sleeping through it.

The token is sent to the API's own origin only: pagination links are
absolute, and artifact downloads redirect to signed storage URLs that must
not see it.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from bot.service.errors import BotError, PermanentError, TransientError
from bot.service.http_policy import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_WAIT,
    DEFAULT_TIMEOUT,
    TRANSPORT_ERRORS,
    RequestPolicy,
    header,
    origin,
    parse_seconds,
    server_side,
)

DEFAULT_API_URL = "https://api.buildkite.com/v2"
SERVICE = "Buildkite"
# Buildkite's rate-limit windows last a minute; a 429 that names no reset is
# assumed to last one whole window.
UNSPECIFIED_RESET = 60.0
# A "reset" above this is an epoch timestamp rather than a number of seconds.
EPOCH_THRESHOLD = 1e9
RATE_LIMIT_HEADERS = ("ratelimit-reset", "ratelimit-user-reset")
# Error bodies are read only for their message; a huge one is not worth holding.
ERROR_BODY_LIMIT = 64 * 1024
# JSON answers above this are parsed in a thread (a build with hundreds of jobs
# is megabytes, and parsing it inline would stall every other request).
INLINE_JSON_LIMIT = 256 * 1024
MAX_REDIRECTS = 5
MAX_PER_PAGE = 100
_CHUNK = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Statuses Buildkite uses to refuse a job retry (not failed, already retried).
_NOT_RETRYABLE = frozenset({400, 422})

REQUEST_FAILED = "Buildkite did not answer {request}: {reason}"
SERVER_ERROR = "Buildkite answered {status} to {request}"
CLIENT_ERROR = "Buildkite answered {status} to {request}: {message}"
UNEXPECTED_ANSWER = "the answer is not {expected}"
ARTIFACT_TOO_LARGE = "artifact {url} is larger than {max_bytes} bytes"
TOO_MANY_REDIRECTS = "more than {limit} redirects"
REDIRECT_WITHOUT_LOCATION = "a redirect without a Location header"
PAGINATION_LOOP = "pagination links lead back to {url}"
BAD_ARGUMENT = "{name} must be {rule}, got {value!r}"

Reader = Callable[[aiohttp.ClientResponse], Awaitable[bytes]]


@dataclass(frozen=True, kw_only=True)
class BuildkiteConnection:
    """Where Buildkite's API is, the token to send it, and how patiently to ask it.

    Not the repository's ``buildkite:`` section (``bot.config.models.BuildkiteConfig``):
    this is the app's own setting, one for every repository.
    """

    api_url: str = DEFAULT_API_URL
    token: str = field(repr=False)
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    max_wait: float = DEFAULT_MAX_WAIT

    def policy(
        self,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> RequestPolicy:
        """The request policy of these settings, reading ``clock`` and waiting with ``sleep``."""
        return RequestPolicy(
            timeout=self.timeout,
            max_retries=self.max_retries,
            max_wait=self.max_wait,
            clock=clock,
            sleep=sleep,
        )


class BuildkiteError(PermanentError):
    """Buildkite refused a request (a 4xx other than 429); ``message`` is its own words."""

    def __init__(self, status: int, message: str, *, request: str = "") -> None:
        shown = request or "a request"
        super().__init__(CLIENT_ERROR.format(status=status, request=shown, message=message))
        self.status = status
        self.message = message


class JobNotRetryable(BuildkiteError):
    """The job cannot be retried: already retried once, or not failed/timed out/canceled."""


class ArtifactTooLarge(PermanentError):
    """An artifact exceeded the caller's size cap; nothing beyond the cap was buffered."""

    def __init__(self, url: str, max_bytes: int) -> None:
        super().__init__(ARTIFACT_TOO_LARGE.format(url=url, max_bytes=max_bytes))
        self.url = url
        self.max_bytes = max_bytes


# --- pure decisions (tested on their own) ----------------------------------------


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


def _without_query(url: str) -> str:
    # A signed download URL carries its credentials in the query.
    return url.split("?", 1)[0]


def _describe(method: str, url: str) -> str:
    return f"{method} {_without_query(url)}"


def _check(name: str, value: int, low: int, high: int | None = None) -> None:
    if value < low or (high is not None and value > high):
        rule = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ValueError(BAD_ARGUMENT.format(name=name, rule=rule, value=value))


# --- body readers ------------------------------------------------------------


async def _read_all(response: aiohttp.ClientResponse) -> bytes:
    return await response.read()


async def _read_prefix(response: aiohttp.ClientResponse, limit: int) -> bytes:
    return await response.content.read(limit)


def _tail_reader(max_bytes: int) -> Reader:
    """Keeps only the last ``max_bytes`` of a body of any size."""

    async def read(response: aiohttp.ClientResponse) -> bytes:
        tail = bytearray()
        async for chunk in response.content.iter_chunked(_CHUNK):
            tail += chunk
            if len(tail) > 2 * max_bytes:  # trim in batches, not on every chunk
                del tail[:-max_bytes]
        return bytes(tail[-max_bytes:])

    return read


def _capped_reader(url: str, max_bytes: int) -> Reader:
    """The whole body, or ``ArtifactTooLarge`` as soon as it passes ``max_bytes``."""

    async def read(response: aiohttp.ClientResponse) -> bytes:
        declared = response.content_length
        if declared is not None and declared > max_bytes:
            raise ArtifactTooLarge(url, max_bytes)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise ArtifactTooLarge(url, max_bytes)
            chunks.append(chunk)
        return b"".join(chunks)

    return read


@dataclass(frozen=True)
class _Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes


def _segment(value: str | int) -> str:
    return urllib.parse.quote(str(value), safe="")


class BuildkiteClient:
    """Buildkite's REST API for one token; share one per app (``requests_made`` adds up)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        connection: BuildkiteConnection,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._session = session
        self._token = connection.token
        self._policy = connection.policy(clock=clock, sleep=sleep)
        self._base = connection.api_url.rstrip("/")
        self._origin = origin(self._base)
        self._timeout = self._policy.client_timeout()
        # A download may legitimately take longer than one API call; what must
        # not happen is a stalled one, so the timeout bounds each wait instead.
        self._stream_timeout = self._policy.stream_timeout()
        # Requests sent with the token (retries included): Buildkite allows a
        # token 50 per minute, which callers issuing many retries must respect.
        self.requests_made = 0

    # --- endpoints -----------------------------------------------------------

    async def builds(
        self,
        org: str,
        pipeline: str,
        *,
        commit: str | None = None,
        branch: str | None = None,
        states: Sequence[str] = (),
        per_page: int = 30,
        max_pages: int = 1,
        exclude_jobs: bool = False,
        include_retried_jobs: bool = False,
    ) -> list[dict[str, Any]]:
        """A pipeline's builds, newest first, following ``Link: rel=next`` up to ``max_pages``."""
        _check("per_page", per_page, 1, MAX_PER_PAGE)
        _check("max_pages", max_pages, 1)
        query: list[tuple[str, str]] = []
        if commit is not None:
            query.append(("commit", commit))
        if branch is not None:
            query.append(("branch", branch))
        query.extend(("state[]", state) for state in states)
        if exclude_jobs:
            query.append(("exclude_jobs", "true"))
        if include_retried_jobs:
            query.append(("include_retried_jobs", "true"))
        query.append(("per_page", str(per_page)))
        url = self._url(["organizations", org, "pipelines", pipeline, "builds"], query)
        return await self._paged(url, max_pages=max_pages)

    async def build(
        self, org: str, pipeline: str, number: int, *, include_retried_jobs: bool = False
    ) -> dict[str, Any]:
        """One build with its jobs (only each step's latest attempt unless asked)."""
        query = [("include_retried_jobs", "true")] if include_retried_jobs else []
        url = self._url(self._build_path(org, pipeline, number), query)
        return await self._object(url)

    async def jobs(
        self,
        org: str,
        pipeline: str,
        number: int,
        *,
        states: Sequence[str] = (),
        step_key: str | None = None,
    ) -> list[dict[str, Any]]:
        """Every job of a build (retried ones included), following the cursor to the end."""
        query = [("state[]", state) for state in states]
        if step_key is not None:
            query.append(("step_key", step_key))
        url: str | None = self._url([*self._build_path(org, pipeline, number), "jobs"], query)
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        while url is not None:
            if url in seen:
                raise BuildkiteError(200, PAGINATION_LOOP.format(url=url))
            seen.add(url)
            page = await self._object(url)
            items.extend(self._list_of_objects(page.get("items"), "GET", url))
            links = page.get("links")
            following = links.get("next") if isinstance(links, dict) else None
            url = urllib.parse.urljoin(url, following) if isinstance(following, str) else None
        return items

    async def job_log_tail(
        self,
        org: str,
        pipeline: str,
        number: int,
        job_id: str,
        *,
        max_bytes: int = 65536,
    ) -> bytes:
        """The last ``max_bytes`` of a job's raw log, undecoded; ``b""`` for an empty log."""
        _check("max_bytes", max_bytes, 1)
        path = [*self._build_path(org, pipeline, number), "jobs", job_id, "log"]
        reply = await self._request(
            "GET",
            self._url(path),
            headers={"Accept": "text/plain", "Range": f"bytes=-{max_bytes}"},
            # 416: nothing to take a suffix of, i.e. the log is empty.
            accept=frozenset({416}),
            # A server ignoring Range answers 200 with the whole log: keep the end only.
            read=_tail_reader(max_bytes),
            streaming=True,
        )
        return b"" if reply.status == 416 else reply.body

    async def retry_job(self, org: str, pipeline: str, number: int, job_id: str) -> dict[str, Any]:
        """Retry one job; the answer is the new job. Never retried automatically on 5xx.

        ``JobNotRetryable`` (with Buildkite's message) when the job was already
        retried once or is not failed, timed out or canceled.
        """
        path = [*self._build_path(org, pipeline, number), "jobs", job_id, "retry"]
        url = self._url(path)
        try:
            return await self._object(url, method="PUT", idempotent=False)
        except BuildkiteError as exc:
            if exc.status in _NOT_RETRYABLE:
                request = _describe("PUT", url)
                raise JobNotRetryable(exc.status, exc.message, request=request) from exc
            raise

    async def artifacts(self, org: str, pipeline: str, number: int) -> list[dict[str, Any]]:
        """Every artifact of a build (all pages)."""
        query = [("per_page", str(MAX_PER_PAGE))]
        url = self._url([*self._build_path(org, pipeline, number), "artifacts"], query)
        return await self._paged(url, max_pages=None)

    async def download_artifact(self, url: str, *, max_bytes: int) -> bytes:
        """An artifact's content, following the redirect to its storage URL.

        ``ArtifactTooLarge`` as soon as it passes ``max_bytes``: the cap bounds
        memory, not just the result.
        """
        _check("max_bytes", max_bytes, 0)
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            reply = await self._request(
                "GET",
                current,
                accept=_REDIRECTS,
                read=_capped_reader(_without_query(url), max_bytes),
                streaming=True,
            )
            if reply.status not in _REDIRECTS:
                return reply.body
            location = header(reply.headers, "location")
            if not location:
                raise BuildkiteError(reply.status, REDIRECT_WITHOUT_LOCATION)
            current = urllib.parse.urljoin(current, location)
        raise BuildkiteError(302, TOO_MANY_REDIRECTS.format(limit=MAX_REDIRECTS))

    # --- plumbing -------------------------------------------------------------

    @staticmethod
    def _build_path(org: str, pipeline: str, number: int) -> list[str | int]:
        return ["organizations", org, "pipelines", pipeline, "builds", number]

    def _url(self, segments: Sequence[str | int], query: Iterable[tuple[str, str]] = ()) -> str:
        url = self._base + "/" + "/".join(_segment(part) for part in segments)
        encoded = encode_query(query)
        return f"{url}?{encoded}" if encoded else url

    async def _paged(self, url: str, *, max_pages: int | None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        pages = 0
        seen: set[str] = set()
        following: str | None = url
        while following is not None and (max_pages is None or pages < max_pages):
            if following in seen:
                raise BuildkiteError(200, PAGINATION_LOOP.format(url=following))
            seen.add(following)
            reply = await self._request("GET", following)
            items.extend(self._list_of_objects(await self._json(reply), "GET", following))
            pages += 1
            link = next_link(header(reply.headers, "link"))
            following = urllib.parse.urljoin(following, link) if link else None
        return items

    async def _object(
        self, url: str, *, method: str = "GET", idempotent: bool = True
    ) -> dict[str, Any]:
        reply = await self._request(method, url, idempotent=idempotent)
        data = await self._json(reply)
        if not isinstance(data, dict):
            expected = UNEXPECTED_ANSWER.format(expected="a JSON object")
            raise BuildkiteError(reply.status, expected, request=_describe(method, url))
        return data

    @staticmethod
    def _list_of_objects(data: object, method: str, url: str) -> list[dict[str, Any]]:
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            expected = UNEXPECTED_ANSWER.format(expected="a JSON list of objects")
            raise BuildkiteError(200, expected, request=_describe(method, url))
        return data

    @staticmethod
    async def _json(reply: _Reply) -> object:
        try:
            if len(reply.body) > INLINE_JSON_LIMIT:
                return await asyncio.to_thread(json.loads, reply.body)
            return json.loads(reply.body)
        except (ValueError, RecursionError):
            expected = UNEXPECTED_ANSWER.format(expected="JSON")
            raise BuildkiteError(reply.status, expected) from None

    async def _request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = True,
        accept: frozenset[int] = frozenset(),
        read: Reader = _read_all,
        streaming: bool = False,
    ) -> _Reply:
        """One call with its retries: a 2xx (or an ``accept``-ed status) answer, or an error."""
        request = _describe(method, url)
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = await self._attempt(method, url, headers or {}, read, streaming)
            except TRANSPORT_ERRORS as exc:
                # No answer at all: retried like a server error.
                delay = self._policy.backoff(attempt) if idempotent else None
                if delay is None:
                    reason = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
                    message = REQUEST_FAILED.format(request=request, reason=reason)
                    raise TransientError(message) from exc
                await self._pause(delay, type(exc).__name__, request, attempt)
                continue
            if 200 <= reply.status < 300 or reply.status in accept:
                return reply
            delay = retry_delay(
                self._policy,
                request=request,
                status=reply.status,
                idempotent=idempotent,
                attempt=attempt,
                headers=reply.headers,
                body=reply.body,
                now=self._policy.clock(),
            )
            if delay is None:
                raise status_error(reply.status, reply.body, request=request)
            await self._pause(delay, reply.status, request, attempt)

    async def _pause(self, delay: float, answer: object, request: str, attempt: int) -> None:
        await self._policy.pause(
            delay, service=SERVICE, answer=answer, request=request, attempt=attempt
        )

    async def _attempt(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        read: Reader,
        streaming: bool,
    ) -> _Reply:
        sent = dict(headers)
        if origin(url) == self._origin:
            sent["Authorization"] = f"Bearer {self._token}"
            self.requests_made += 1
        # Redirects are never followed blindly: aiohttp would carry the token along.
        async with self._session.request(
            method,
            URL(url, encoded=True),
            headers=sent,
            allow_redirects=False,
            timeout=self._stream_timeout if streaming else self._timeout,
        ) as response:
            if 200 <= response.status < 300:
                body = await read(response)
            else:
                body = await _read_prefix(response, ERROR_BODY_LIMIT)
            return _Reply(response.status, response.headers, body)
