"""Whether image tags exist on a container registry: a manifest ``HEAD`` per tag.

The OCI distribution API answers ``HEAD /v2/<repository>/manifests/<tag>`` with 200 or
404 and no body, the cheapest question a registry takes. Most registries, public ones
included, first answer 401 with a challenge: ``Bearer`` (fetch a token from the realm
it names, anonymously or with the configured credentials, then ask again) or ``Basic``.
Tokens are kept per (realm, service, scope) until shortly before they expire, and a
repository's next probe sends its token straight away, so many tags of one repository
cost one request each after the first.

Nothing here raises for the registry's trouble (refusals, rate limits, outages, a
broken token endpoint): each probe ends in a ``TagProbe`` saying what was seen, and
``exists`` is None when it says nothing about the tag. No third-party registry library
is used: the Python ones are synchronous or unmaintained, and one request needs none.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import aiohttp
from yarl import URL

from bot.core.http_policy import TRANSPORT_ERRORS, parse_seconds
from bot.registry.challenge import basic_authorization, usable_challenge
from bot.registry.probe import (
    CONNECTION_REFUSED,
    DNS_FAILED,
    FORBIDDEN,
    RATE_LIMITED,
    RATE_LIMITED_RETRY,
    SERVER_ERROR,
    TIMED_OUT,
    TOKEN_MISSING,
    TOKEN_REFUSED,
    TOKEN_UNREACHABLE,
    UNAUTHORIZED,
    UNEXPECTED,
    UNREACHABLE,
    TagProbe,
)
from bot.registry.reference import ImageRef
from bot.registry.tokens import IssuedToken, TokenCache, TokenKey, read_token

__all__ = ["MANIFEST_MEDIA_TYPES", "ImageRef", "RegistryClient", "TagProbe"]

# Every manifest kind a tag may name: a multi-platform index or a single image, in the
# OCI and the Docker formats. A registry answers 404 for a kind the client did not accept.
MANIFEST_MEDIA_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
ACCEPT = ", ".join(MANIFEST_MEDIA_TYPES)
DEFAULT_CONCURRENCY = 4
BAD_CONCURRENCY = "concurrency must be at least 1"


class _TokenFailed(Exception):
    """The token endpoint did not give a token; ``str()`` is the probe's error."""


@dataclass(frozen=True)
class _Answer:
    status: int
    challenges: tuple[str, ...]
    retry_after: str | None


def _reason(exc: BaseException, host: str, timeout: float) -> str:
    """Why no answer came, in a few words."""
    if isinstance(exc, TimeoutError):
        return TIMED_OUT.format(seconds=timeout)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return DNS_FAILED.format(host=host)
    if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(
        exc.os_error, ConnectionRefusedError
    ):
        return CONNECTION_REFUSED
    return str(exc) or type(exc).__name__


def _outcome(ref: ImageRef, answer: _Answer) -> TagProbe:
    status = answer.status
    if status in (200, 404):
        return TagProbe(ref, status)
    if status == 401:
        return TagProbe(ref, status, UNAUTHORIZED)
    if status == 403:
        return TagProbe(ref, status, FORBIDDEN)
    if status == 429:
        seconds = parse_seconds(answer.retry_after)
        if seconds is None:
            return TagProbe(ref, status, RATE_LIMITED)
        return TagProbe(ref, status, RATE_LIMITED_RETRY.format(seconds=seconds))
    return TagProbe(ref, status, SERVER_ERROR if status >= 500 else UNEXPECTED)


class RegistryClient:
    """Manifest probes on one registry (or on each reference's own host when no endpoint)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        endpoint: str | None = None,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._endpoint = endpoint.rstrip("/") if endpoint else None
        self._basic = (
            basic_authorization(username, password)
            if username is not None and password is not None
            else None
        )
        self._timeout_seconds = timeout
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._tokens = TokenCache(clock)
        # The token a repository's last challenge asked for: its next probe sends it first.
        self._keys: dict[tuple[str, str], TokenKey] = {}
        # Registries that challenged with Basic: their next probes send the credentials first.
        self._basic_origins: set[str] = set()
        self._requests = 0

    @property
    def requests_made(self) -> int:
        """Requests sent, manifest probes and token fetches alike."""
        return self._requests

    def _base(self, ref: ImageRef) -> str:
        return self._endpoint or f"https://{ref.host}"

    async def manifest_status(self, ref: ImageRef) -> TagProbe:
        """What the registry says about ``ref``'s tag; never raises for the registry's trouble."""
        base = self._base(ref)
        try:
            return await self._probe(ref, base)
        except _TokenFailed as exc:
            # The registry's 401 stands; the error says which endpoint kept the token back.
            return TagProbe(ref, 401, str(exc))
        except TRANSPORT_ERRORS as exc:
            reason = _reason(exc, ref.host, self._timeout_seconds)
            return TagProbe(ref, None, UNREACHABLE.format(reason=reason))

    async def manifest_statuses(
        self, refs: Sequence[ImageRef], *, concurrency: int = DEFAULT_CONCURRENCY
    ) -> list[TagProbe]:
        """``manifest_status`` of each, at most ``concurrency`` at a time, in ``refs``' order."""
        if concurrency < 1:
            raise ValueError(BAD_CONCURRENCY)
        slots = asyncio.Semaphore(concurrency)

        async def one(ref: ImageRef) -> TagProbe:
            async with slots:
                return await self.manifest_status(ref)

        return list(await asyncio.gather(*(one(ref) for ref in refs)))

    def _known(self, base: str, repository: str) -> tuple[str | None, tuple[TokenKey, str] | None]:
        """The ``Authorization`` an earlier challenge asked for here, and the token it carries."""
        key = self._keys.get((base, repository))
        token = self._tokens.get(key) if key is not None else None
        if key is not None and token is not None:
            return f"Bearer {token}", (key, token)
        if base in self._basic_origins and self._basic is not None:
            return self._basic, None
        return None, None

    async def _probe(self, ref: ImageRef, base: str) -> TagProbe:
        url = f"{base}/v2/{ref.repository}/manifests/{ref.tag}"
        headers = {"Accept": ACCEPT}
        known, token = self._known(base, ref.repository)
        if known is not None:
            headers["Authorization"] = known
        answer = await self._head(url, headers)
        if answer.status == 401:
            if token is not None:
                # Refused (revoked, or the registry's clock is ahead): never send it again.
                self._tokens.drop(*token)
            authorization = await self._authorize(answer, ref, base)
            # Once: the same credentials again would only be refused again.
            if authorization is not None and authorization != known:
                answer = await self._head(url, {**headers, "Authorization": authorization})
        return _outcome(ref, answer)

    async def _head(self, url: str, headers: dict[str, str]) -> _Answer:
        self._requests += 1
        async with self._session.head(
            url, headers=headers, timeout=self._timeout, allow_redirects=False
        ) as response:
            return _Answer(
                response.status,
                tuple(response.headers.getall("WWW-Authenticate", ())),
                response.headers.get("Retry-After"),
            )

    async def _authorize(self, answer: _Answer, ref: ImageRef, base: str) -> str | None:
        """The ``Authorization`` answering the challenge, or None when there is none to give."""
        challenge = usable_challenge(answer.challenges)
        if challenge is None:
            return None
        if challenge.scheme == "basic":
            if self._basic is None:
                return None
            self._basic_origins.add(base)
            return self._basic
        key = TokenKey(
            challenge.param("realm") or "",
            challenge.param("service") or "",
            challenge.param("scope") or f"repository:{ref.repository}:pull",
        )
        self._keys[base, ref.repository] = key
        return f"Bearer {await self._token(key)}"

    async def _token(self, key: TokenKey) -> str:
        # One fetch per key at a time: concurrent probes of one repository share it.
        async with self._tokens.lock(key):
            cached = self._tokens.get(key)
            if cached is not None:
                return cached
            issued = await self._fetch_token(key)
            self._tokens.put(key, issued)
            return issued.token

    async def _fetch_token(self, key: TokenKey) -> IssuedToken:
        wanted = (("service", key.service), ("scope", key.scope))
        query = [(name, value) for name, value in wanted if value]
        # Anonymous unless credentials are configured: public registries give pull tokens so.
        token_headers = {"Authorization": self._basic} if self._basic is not None else {}
        self._requests += 1
        try:
            async with self._session.get(
                key.realm, params=query, headers=token_headers, timeout=self._timeout
            ) as response:
                if response.status != 200:
                    raise _TokenFailed(
                        TOKEN_REFUSED.format(endpoint=key.realm, status=response.status)
                    )
                body = await response.json(content_type=None)
        except TRANSPORT_ERRORS as exc:
            host = URL(key.realm).host or key.realm
            reason = _reason(exc, host, self._timeout_seconds)
            raise _TokenFailed(TOKEN_UNREACHABLE.format(endpoint=key.realm, reason=reason)) from exc
        except ValueError as exc:
            raise _TokenFailed(TOKEN_MISSING.format(endpoint=key.realm)) from exc
        issued = read_token(body)
        if issued is None:
            raise _TokenFailed(TOKEN_MISSING.format(endpoint=key.realm))
        return issued
