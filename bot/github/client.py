"""GitHub access: one gidgethub client per installation, sharing one session.

Each installation's client fills in its installation token before every
request, keeps its own ETag cache (a 304 answer does not count against the
rate limit), bounds every request with a timeout, and reacts to rate limits
and server errors through gidgethub's ``handle_rate_limit_error`` hook.

Each installation's client (and the App's own calls) sends through a ``Pacer``
(``bot.core.pacing``) holding GitHub's secondary limits, so a burst of writes
waits its turn instead of being refused. Only the send is paced, not a retry's wait.

Waiting is bounded by ``max_wait``: a longer wait is turned into a
``TransientError`` carrying ``retry_after`` so the inbox reschedules the
delivery instead of a worker sleeping through it.

Longer than 400 lines because the retry decisions gidgethub's hooks call and the
clients that share one policy (and its observer) are kept in one place.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import cachetools
import gidgethub
import gidgethub.abc
import gidgethub.aiohttp

from bot.core.errors import PermanentError, TransientError
from bot.core.http_policy import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_WAIT,
    DEFAULT_TIMEOUT,
    SERVER_ERROR_BACKOFF,
    RequestPolicy,
    ResponseObserver,
    header,
    origin,
    parse_seconds,
    server_side,
)
from bot.core.pacing import Pacer, TokenBucket
from bot.github.auth import (
    InstallationToken,
    InstallationTokens,
    make_app_jwt,
    parse_installation_token,
)

SERVICE = "GitHub"
SERVICE_LABEL = "github"  # its name in the metrics
# The User-Agent GitHub requires of every request (gidgethub sends the requester).
USER_AGENT = "followup-bot"

# Requests a retry cannot turn into a second effect, retried in place on a 5xx (or 408):
# reads; writes addressed by their content (a blob, tree or commit with the same
# content is harmless twice: nothing points at the spare); writes that set a
# state (a ref to a known sha, a PR's or comment's fields, labels or a reaction
# added). A 5xx does not prove the first attempt did nothing, so everything else
# (creating a PR, a comment, an issue, a ref; merging) is left to its caller,
# which looks for the effect before trying again (``bot.github.effects``).
READ_METHODS = frozenset({"GET", "HEAD"})
_RETRY_SAFE_WRITES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (method, re.compile(pattern))
    for method, pattern in (
        ("POST", r"/repos/[^/]+/[^/]+/git/(blobs|trees|commits)"),
        ("POST", r"/repos/[^/]+/[^/]+/issues/[0-9]+/labels"),
        # GitHub answers 200 with the existing reaction when it is added again.
        ("POST", r"/repos/[^/]+/[^/]+/issues/comments/[0-9]+/reactions"),
        ("PATCH", r"/repos/[^/]+/[^/]+/git/refs/.+"),
        ("PATCH", r"/repos/[^/]+/[^/]+/(pulls|issues)/[0-9]+"),
        ("PATCH", r"/repos/[^/]+/[^/]+/issues/comments/[0-9]+"),
        ("PUT", r"/repos/[^/]+/[^/]+/issues/[0-9]+/labels"),
        ("DELETE", r"/repos/[^/]+/[^/]+/issues/[0-9]+/labels/.+"),
    )
)

# GitHub's advice for a rate-limit answer without retry-after or reset headers:
# wait at least a minute, then back off exponentially.
UNSPECIFIED_RATE_LIMIT_BACKOFF = 60.0
# Waiting until `x-ratelimit-reset` exactly may land a moment before GitHub resets.
RESET_MARGIN = 1.0
# An App JWT is valid for 9 minutes; reissuing it every minute leaves any
# request (with its retries) plenty of validity.
APP_JWT_REUSE_SECONDS = 60.0

# GitHub's secondary rate limits ("About secondary rate limits" in its REST docs):
# at most 100 concurrent requests, and at most 80 content-creating requests
# (POST, PATCH, PUT, DELETE, and GraphQL mutations; a GraphQL query, though a POST,
# creates nothing and is paced as a read)
# a minute and 500 an hour. The concurrency cap defaults well below GitHub's 100
# (FOLLOWUP_BOT_GITHUB_CONCURRENCY: 1..100).
DEFAULT_CONCURRENCY = 10
WRITES_PER_MINUTE = 80
WRITES_PER_HOUR = 500

REQUEST_TIMED_OUT = "GitHub did not answer {method} {url} within {timeout:g} s"
BAD_REPO_NAME = "expected a repository as 'owner/name', got {name!r}"
BAD_INSTALLATION_ANSWER = "GitHub's installation answer for {name} has no id"


def _rate_limit_wait(
    exc: gidgethub.HTTPException, *, attempt: int, now: float
) -> tuple[float, float] | None:
    """(seconds to sleep, seconds to report as retry_after), or None if no rate limit."""
    if exc.status_code not in (403, 429):
        return None
    retry_after = parse_seconds(header(exc.headers, "retry-after"))
    if retry_after is not None:
        retry_after = max(0.0, retry_after)
        return retry_after, retry_after
    reset = parse_seconds(header(exc.headers, "x-ratelimit-reset"))
    if header(exc.headers, "x-ratelimit-remaining") == "0" and reset is not None:
        until_reset = max(0.0, reset - now)
        return until_reset + RESET_MARGIN, until_reset
    # A 403 without those headers is usually a permission problem; GitHub's
    # rate-limit answers say so in their message.
    if exc.status_code == 429 or "rate limit" in str(exc).lower():
        backoff = UNSPECIFIED_RATE_LIMIT_BACKOFF * 2.0 ** (attempt - 1)
        return backoff, backoff
    return None


def retry_safe(method: str, url: str) -> bool:
    """Whether repeating ``method url`` after an unknown outcome makes no second effect."""
    if method in READ_METHODS:
        return True
    path = urllib.parse.urlsplit(url).path
    # GitHub Enterprise serves the API under /api/v3; the patterns start at /repos.
    path = path[path.find("/repos/") :] if "/repos/" in path else path
    return any(m == method and p.fullmatch(path) for m, p in _RETRY_SAFE_WRITES)


def retry_delay(
    policy: RequestPolicy, *, method: str, url: str, exc: gidgethub.HTTPException, attempt: int
) -> float | None:
    """Seconds to wait before retrying, or None to let ``exc`` through.

    Raises ``TransientError`` (with ``retry_after``) for a rate limit whose
    wait exceeds ``max_wait`` or that persists beyond ``max_retries``.
    """
    wait = _rate_limit_wait(exc, attempt=attempt, now=policy.clock())
    if wait is not None:
        sleep_for, retry_after = wait
        return policy.rate_limit_delay(
            service=SERVICE,
            request=f"{method} {url}",
            attempt=attempt,
            retry_after=retry_after,
            sleep_for=sleep_for,
            cause=exc,
        )
    if server_side(int(exc.status_code)) and retry_safe(method, url):
        return policy.backoff(attempt)
    return None


def github_pacer(
    concurrency: int,
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]],
    writes_per_minute: int = WRITES_PER_MINUTE,
    writes_per_hour: int = WRITES_PER_HOUR,
) -> Pacer:
    """The pacing of one installation's requests: ``concurrency`` in flight, writes
    at most ``writes_per_minute`` a minute and ``writes_per_hour`` an hour (GitHub's
    documented secondary limits by default; a GitHub Enterprise Server's admin may set
    others)."""
    return Pacer(
        concurrency=concurrency,
        write_buckets=(
            TokenBucket(writes_per_minute, 60.0, clock=clock, sleep=sleep),
            TokenBucket(writes_per_hour, 3600.0, clock=clock, sleep=sleep),
        ),
        clock=clock,
    )


# Set while a GraphQL query (not a mutation) is sent: its POST is paced as a read.
_GRAPHQL_READ: contextvars.ContextVar[bool] = contextvars.ContextVar("graphql_read", default=False)


def graphql_reads_only(document: str) -> bool:
    """Whether a GraphQL document is a query (its first operation ``query`` or ``{``).

    Comments are skipped; anything else (a mutation, a subscription, a fragment first)
    counts as a write, which can only make the pacing more careful.
    """
    for line in document.splitlines():
        text = line.split("#", 1)[0].strip()
        if text:
            return re.match(r"\{|query\b", text) is not None
    return False


def graphql_url(base_url: str) -> str:
    """GitHub's GraphQL endpoint next to the REST ``base_url``.

    gidgethub defaults to api.github.com whatever the base URL, which would
    send an Enterprise or sandbox token to the public GitHub.
    """
    base = base_url.rstrip("/")
    if base.endswith("/api/v3"):  # GitHub Enterprise Server
        return base.removesuffix("/v3") + "/graphql"
    return base + "/graphql"


class _PatientGitHubAPI(gidgethub.aiohttp.GitHubAPI):
    """gidgethub over aiohttp with a timeout per request and bounded retries."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        requester: str,
        base_url: str,
        policy: RequestPolicy,
        pacer: Pacer,
        cache: gidgethub.abc.CACHE_TYPE | None = None,
    ) -> None:
        super().__init__(session, requester, base_url=base_url, cache=cache)
        self.policy = policy
        self.pacer = pacer
        self._timeout = policy.client_timeout()

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        # One attempt: gidgethub calls this once per attempt and sleeps between
        # attempts outside it, so a retry's wait holds no slot and no token.
        try:
            async with (
                self.pacer.slot(write=method not in READ_METHODS and not _GRAPHQL_READ.get()),
                self._session.request(
                    method, url, headers=headers, data=body, timeout=self._timeout
                ) as response,
            ):
                self.policy.seen(SERVICE_LABEL, response.status, response.headers)
                return response.status, response.headers, await response.read()
        except TimeoutError as exc:
            message = REQUEST_TIMED_OUT.format(method=method, url=url, timeout=self.policy.timeout)
            raise TransientError(message) from exc

    async def sleep(self, seconds: float) -> None:
        await self.policy.sleep(seconds)

    async def handle_rate_limit_error(
        self, *, method: str, url: str, exception: gidgethub.HTTPException, attempt: int
    ) -> bool:
        delay = retry_delay(self.policy, method=method, url=url, exc=exception, attempt=attempt)
        if delay is None:
            return False
        status = int(exception.status_code)
        await self.policy.pause(
            delay, service=SERVICE, answer=status, request=f"{method} {url}", attempt=attempt
        )
        return True

    async def graphql(self, query: str, *, endpoint: str | None = None, **variables: Any) -> Any:
        endpoint = endpoint if endpoint is not None else graphql_url(self.base_url)
        token = _GRAPHQL_READ.set(graphql_reads_only(query))
        try:
            return await super().graphql(query, endpoint=endpoint, **variables)
        finally:
            _GRAPHQL_READ.reset(token)


class GitHubClient(_PatientGitHubAPI):
    """A client acting as one installation; reuse it so its ETag cache pays off."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        installation_id: int,
        tokens: InstallationTokens,
        requester: str,
        base_url: str,
        policy: RequestPolicy,
        pacer: Pacer,
        etag_cache_size: int,
    ) -> None:
        cache: cachetools.LRUCache[str, Any] = cachetools.LRUCache(maxsize=etag_cache_size)
        super().__init__(
            session, requester=requester, base_url=base_url, policy=policy, pacer=pacer, cache=cache
        )
        self.installation_id = installation_id
        self._tokens = tokens
        self._origin = origin(base_url)

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        # Filled in per attempt (not once per call) so a retry after a long
        # wait picks up a refreshed token. Explicit jwt/oauth_token calls keep
        # theirs, and the token never goes to another host (pagination links
        # and GraphQL endpoints are absolute URLs).
        token = None
        if "authorization" not in headers and origin(url) == self._origin:
            token = await self._tokens.get(self.installation_id)
            headers = {**headers, "authorization": f"token {token}"}
        status, response_headers, body_bytes = await super()._request(method, url, headers, body)
        if status == 401 and token is not None:
            # Revoked before its expiry (e.g. the App was reinstalled): fetch a
            # new one next time instead of failing for the rest of the hour.
            self._tokens.invalidate(self.installation_id, token)
        return status, response_headers, body_bytes


class GitHubApp:
    """The App: its JWT, its installations' tokens and clients, one session for all."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        app_id: str,
        private_key: str,
        base_url: str,
        requester: str = USER_AGENT,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_backoff: float = SERVER_ERROR_BACKOFF,
        max_wait: float = DEFAULT_MAX_WAIT,
        etag_cache_size: int = 2000,
        concurrency: int = DEFAULT_CONCURRENCY,
        writes_per_minute: int = WRITES_PER_MINUTE,
        writes_per_hour: int = WRITES_PER_HOUR,
        make_pacer: Callable[[], Pacer] | None = None,
        observe: ResponseObserver | None = None,
    ) -> None:
        """``make_pacer`` makes each installation's pacer (and the App's own); by
        default ``github_pacer`` with ``concurrency`` on ``clock`` and ``sleep``; ``observe``
        hears every answer (the metrics)."""
        self._session = session
        self._app_id = app_id
        self._private_key = private_key
        self._base_url = base_url
        self._requester = requester
        self._clock = clock
        self._etag_cache_size = etag_cache_size
        self._policy = RequestPolicy(
            timeout=timeout,
            max_retries=max_retries,
            max_wait=max_wait,
            backoff_base=retry_backoff,
            clock=clock,
            sleep=sleep,
            observe=observe,
        )
        self._make_pacer = make_pacer or (
            lambda: github_pacer(
                concurrency,
                clock=clock,
                sleep=sleep,
                writes_per_minute=writes_per_minute,
                writes_per_hour=writes_per_hour,
            )
        )
        # Calls made as the App itself; each passes the JWT explicitly. They
        # count against the App, not an installation, so they have their own pacer.
        self._app_api = _PatientGitHubAPI(
            session,
            requester=requester,
            base_url=base_url,
            policy=self._policy,
            pacer=self._make_pacer(),
        )
        self.tokens = InstallationTokens(self._create_installation_token, clock=clock)
        self._jwt: tuple[str, float] | None = None
        self._clients: dict[int, GitHubClient] = {}
        self._repo_installations: dict[str, int] = {}

    def app_jwt(self) -> str:
        """The App's JWT, reissued every minute."""
        now = self._clock()
        if self._jwt is None or now - self._jwt[1] >= APP_JWT_REUSE_SECONDS:
            self._jwt = make_app_jwt(self._app_id, self._private_key, now), now
        return self._jwt[0]

    async def installation_token(self, installation_id: int) -> str:
        """A valid token for the installation (cached; minted with the JWT when needed)."""
        return await self.tokens.get(installation_id)

    async def installation_client(self, installation_id: int) -> GitHubClient:
        """The installation's client: the same object every time."""
        client = self._clients.get(installation_id)
        if client is None:
            client = GitHubClient(
                self._session,
                installation_id=installation_id,
                tokens=self.tokens,
                requester=self._requester,
                base_url=self._base_url,
                policy=self._policy,
                pacer=self._make_pacer(),
                etag_cache_size=self._etag_cache_size,
            )
            self._clients[installation_id] = client
        return client

    async def repo_client(self, full_name: str) -> GitHubClient:
        """The client of the installation that covers ``owner/name``."""
        installation_id = self._repo_installations.get(full_name)
        if installation_id is None:
            installation_id = await self._find_installation(full_name)
            self._repo_installations[full_name] = installation_id
        return await self.installation_client(installation_id)

    def forget_installation(self, installation_id: int) -> None:
        """Drop what is cached about an installation (e.g. after it was deleted)."""
        self._clients.pop(installation_id, None)
        self.tokens.invalidate(installation_id)
        for name, known in list(self._repo_installations.items()):
            if known == installation_id:
                del self._repo_installations[name]

    async def _find_installation(self, full_name: str) -> int:
        owner, _, repo = full_name.partition("/")
        if not owner or not repo or "/" in repo:
            raise ValueError(BAD_REPO_NAME.format(name=full_name))
        data = await self._app_api.getitem(
            "/repos/{owner}/{repo}/installation",
            {"owner": owner, "repo": repo},
            jwt=self.app_jwt(),
        )
        try:
            return int(data["id"])
        except (TypeError, KeyError, ValueError) as exc:
            raise PermanentError(BAD_INSTALLATION_ANSWER.format(name=full_name)) from exc

    async def _create_installation_token(self, installation_id: int) -> InstallationToken:
        data = await self._app_api.post(
            "/app/installations/{installation_id}/access_tokens",
            {"installation_id": installation_id},
            data=b"",
            jwt=self.app_jwt(),
        )
        return parse_installation_token(data)
