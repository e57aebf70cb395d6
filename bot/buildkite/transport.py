"""How one request reaches Buildkite: the connection settings (`BuildkiteConnection`),
the body readers, and `Transport`, which sends a request with its retries and reads
JSON objects and pages from the answers.

Every request is bounded by a timeout. Reads (GET) are retried a bounded
number of times on 5xx answers and dropped connections; a request sent with
``idempotent=False`` (the job retry, a PUT; a build's creation, a POST) never is,
since a 5xx does not prove Buildkite did not act on it. A 429's wait (``bot.buildkite.decisions``)
longer than ``max_wait`` becomes a ``TransientError`` with ``retry_after`` so
the inbox reschedules the delivery instead of a worker sleeping through it.

Requests to the API go through the token's ``Pacer`` (``bot.core.pacing``):
at most ``requests_per_minute`` in any minute (retries included) and
``concurrency`` in flight, so a burst waits its turn instead of meeting 429s.
Downloads from other origins (signed storage URLs) are not the API's to count.

The token is sent to the API's own origin only: pagination links are
absolute, and artifact downloads redirect to signed storage URLs that must
not see it.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
from yarl import URL

from bot.buildkite.decisions import (
    SERVICE,
    describe,
    encode_query,
    next_link,
    retry_delay,
    status_error,
)
from bot.buildkite.errors import ArtifactTooLarge, BuildkiteError
from bot.core.errors import TransientError
from bot.core.http_policy import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_WAIT,
    DEFAULT_TIMEOUT,
    SERVER_ERROR_BACKOFF,
    TRANSPORT_ERRORS,
    RequestPolicy,
    ResponseObserver,
    header,
    origin,
)
from bot.core.pacing import Pacer, TokenBucket

DEFAULT_API_URL = "https://api.buildkite.com/v2"
SERVICE_LABEL = "buildkite"  # its name in the metrics
# Buildkite limits REST requests per organization (200 a minute); the bot's
# share is a budget per token, 50 a minute unless configured.
DEFAULT_REQUESTS_PER_MINUTE = 50
DEFAULT_CONCURRENCY = 10
# Error bodies are read only for their message; a huge one is not worth holding.
ERROR_BODY_LIMIT = 64 * 1024
# JSON answers above this are parsed in a thread (a build with hundreds of jobs
# is megabytes, and parsing it inline would stall every other request).
INLINE_JSON_LIMIT = 256 * 1024
_CHUNK = 64 * 1024

REQUEST_FAILED = "Buildkite did not answer {request}: {reason}"
UNEXPECTED_ANSWER = "the answer is not {expected}"
PAGINATION_LOOP = "pagination links lead back to {url}"

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
    retry_backoff: float = SERVER_ERROR_BACKOFF
    requests_per_minute: int = DEFAULT_REQUESTS_PER_MINUTE
    concurrency: int = DEFAULT_CONCURRENCY

    def pacer(
        self,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> Pacer:
        """The token's pacing: ``requests_per_minute`` in any minute, ``concurrency`` at once."""
        bucket = TokenBucket(self.requests_per_minute, 60.0, clock=clock, sleep=sleep)
        return Pacer(concurrency=self.concurrency, all_buckets=(bucket,), clock=clock)

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
            backoff_base=self.retry_backoff,
            clock=clock,
            sleep=sleep,
        )


# --- body readers ------------------------------------------------------------


async def read_all(response: aiohttp.ClientResponse) -> bytes:
    return await response.read()


async def _read_prefix(response: aiohttp.ClientResponse, limit: int) -> bytes:
    return await response.content.read(limit)


def tail_reader(max_bytes: int) -> Reader:
    """Keeps only the last ``max_bytes`` of a body of any size."""

    async def read(response: aiohttp.ClientResponse) -> bytes:
        tail = bytearray()
        async for chunk in response.content.iter_chunked(_CHUNK):
            tail += chunk
            if len(tail) > 2 * max_bytes:  # trim in batches, not on every chunk
                del tail[:-max_bytes]
        return bytes(tail[-max_bytes:])

    return read


def capped_reader(url: str, max_bytes: int) -> Reader:
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
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes


def _segment(value: str | int) -> str:
    return urllib.parse.quote(str(value), safe="")


class Transport:
    """Requests to Buildkite's API for one token, on the app's one session."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        connection: BuildkiteConnection,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        observe: ResponseObserver | None = None,
    ) -> None:
        self._session = session
        self._token = connection.token
        self._policy = replace(connection.policy(clock=clock, sleep=sleep), observe=observe)
        self.pacer = connection.pacer(clock=clock, sleep=sleep)
        self._base = connection.api_url.rstrip("/")
        self._origin = origin(self._base)
        self._timeout = self._policy.client_timeout()
        # A download may legitimately take longer than one API call; what must
        # not happen is a stalled one, so the timeout bounds each wait instead.
        self._stream_timeout = self._policy.stream_timeout()
        # Requests sent with the token (retries included), each paced by `pacer`.
        self.requests_made = 0

    def url(self, segments: Sequence[str | int], query: Iterable[tuple[str, str]] = ()) -> str:
        """The API URL of ``segments`` (each quoted) with ``query``."""
        url = self._base + "/" + "/".join(_segment(part) for part in segments)
        encoded = encode_query(query)
        return f"{url}?{encoded}" if encoded else url

    async def link_pages(self, url: str, *, max_pages: int | None) -> list[dict[str, Any]]:
        """The objects of a JSON list and its pages, following ``Link: rel=next``."""
        items: list[dict[str, Any]] = []
        pages = 0
        seen: set[str] = set()
        following: str | None = url
        while following is not None and (max_pages is None or pages < max_pages):
            if following in seen:
                raise BuildkiteError(200, PAGINATION_LOOP.format(url=following))
            seen.add(following)
            reply = await self.request("GET", following)
            items.extend(self._list_of_objects(await self._json(reply), "GET", following))
            pages += 1
            link = next_link(header(reply.headers, "link"))
            following = urllib.parse.urljoin(following, link) if link else None
        return items

    async def cursor_pages(self, url: str) -> list[dict[str, Any]]:
        """The ``items`` of a JSON object and its pages, following ``links.next`` to the end."""
        following: str | None = url
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        while following is not None:
            if following in seen:
                raise BuildkiteError(200, PAGINATION_LOOP.format(url=following))
            seen.add(following)
            page = await self.json_object(following)
            items.extend(self._list_of_objects(page.get("items"), "GET", following))
            links = page.get("links")
            after = links.get("next") if isinstance(links, dict) else None
            following = urllib.parse.urljoin(following, after) if isinstance(after, str) else None
        return items

    async def json_object(
        self,
        url: str,
        *,
        method: str = "GET",
        idempotent: bool = True,
        data: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON object a request (with ``data`` as its JSON body, if given) answers."""
        reply = await self.request(method, url, idempotent=idempotent, data=data)
        answer = await self._json(reply)
        if not isinstance(answer, dict):
            expected = UNEXPECTED_ANSWER.format(expected="a JSON object")
            raise BuildkiteError(reply.status, expected, request=describe(method, url))
        return answer

    @staticmethod
    def _list_of_objects(data: object, method: str, url: str) -> list[dict[str, Any]]:
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            expected = UNEXPECTED_ANSWER.format(expected="a JSON list of objects")
            raise BuildkiteError(200, expected, request=describe(method, url))
        return data

    @staticmethod
    async def _json(reply: Reply) -> object:
        try:
            if len(reply.body) > INLINE_JSON_LIMIT:
                return await asyncio.to_thread(json.loads, reply.body)
            return json.loads(reply.body)
        except (ValueError, RecursionError):
            expected = UNEXPECTED_ANSWER.format(expected="JSON")
            raise BuildkiteError(reply.status, expected) from None

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = True,
        accept: frozenset[int] = frozenset(),
        read: Reader = read_all,
        streaming: bool = False,
        data: Mapping[str, Any] | None = None,
    ) -> Reply:
        """One call with its retries: a 2xx (or an ``accept``-ed status) answer, or an error."""
        request = describe(method, url)
        sent = dict(headers or {})
        body = None
        if data is not None:
            body = json.dumps(data).encode()
            sent["Content-Type"] = "application/json"
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = await self._attempt(method, url, sent, read, streaming, body)
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
        body: bytes | None = None,
    ) -> Reply:
        sent = dict(headers)
        api = origin(url) == self._origin
        if api:
            sent["Authorization"] = f"Bearer {self._token}"
        # Only this attempt is paced: a retry's wait (in `request`) holds no slot.
        async with self.pacer.slot(write=method != "GET") if api else nullcontext():
            if api:
                self.requests_made += 1
            # Redirects are never followed blindly: aiohttp would carry the token along.
            async with self._session.request(
                method,
                URL(url, encoded=True),
                headers=sent,
                data=body,
                allow_redirects=False,
                timeout=self._stream_timeout if streaming else self._timeout,
            ) as response:
                if api:  # a signed download elsewhere is no Buildkite API answer
                    self._policy.seen(SERVICE_LABEL, response.status, response.headers)
                if 200 <= response.status < 300:
                    body = await read(response)
                else:
                    body = await _read_prefix(response, ERROR_BODY_LIMIT)
                return Reply(response.status, response.headers, body)
