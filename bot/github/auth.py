"""GitHub App credentials: the App's own JWT and per-installation access tokens.

An installation token lasts an hour; minting one per request would waste a
request and invite the secondary rate limit, so tokens are cached per
installation and refreshed a few minutes before they expire. Only one refresh
per installation runs at a time: a burst of deliveries for one installation
shares a single token request (the snekomatic pattern).
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from bot.core.errors import PermanentError

# GitHub accepts an App JWT whose `iat` is up to a minute in its future and
# whose `exp` is at most ten minutes after its own clock. Back-dating `iat` and
# keeping `exp` a minute short of the limit tolerates a minute of skew either way.
CLOCK_SKEW_SECONDS = 60
JWT_VALID_FOR_SECONDS = 9 * 60

# Refresh a token this long before GitHub says it expires: covers clock skew
# plus the time a request (with its retries) may take after the token is read.
TOKEN_REFRESH_MARGIN_SECONDS = 5 * 60

NOT_AN_RSA_KEY = "the GitHub App private key must be an RSA key (GitHub makes those), not {kind}"
TOKEN_RESPONSE_INVALID = "GitHub's installation token answer lacks a token or expiry: {keys}"


def make_app_jwt(app_id: str, private_key: str, now: float) -> str:
    """The App's RS256 JWT for ``now`` (epoch seconds), for the /app endpoints."""
    issued = int(now)
    claims = {
        "iat": issued - CLOCK_SKEW_SECONDS,
        "exp": issued + JWT_VALID_FOR_SECONDS,
        "iss": app_id,
    }
    return jwt.encode(claims, signing_key(private_key), algorithm="RS256")


@functools.cache
def signing_key(private_key: str) -> RSAPrivateKey:
    """The App's key from its PEM text, loaded once per process (a bad key is not kept)."""
    # Loading an RSA key checks its consistency (~15-45 ms of CPU): once per key, rather
    # than on the event loop for every JWT, as PyJWT does when handed the PEM text.
    key = load_pem_private_key(private_key.encode(), password=None)
    if not isinstance(key, RSAPrivateKey):
        raise PermanentError(NOT_AN_RSA_KEY.format(kind=type(key).__name__))
    return key


@dataclass(frozen=True)
class InstallationToken:
    token: str
    expires_at: float  # epoch seconds


def parse_installation_token(data: Any) -> InstallationToken:
    """Read GitHub's `create an installation access token` answer."""
    try:
        token = data["token"]
        expires_at = datetime.datetime.fromisoformat(data["expires_at"])
    except (TypeError, KeyError, ValueError) as exc:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise PermanentError(TOKEN_RESPONSE_INVALID.format(keys=keys)) from exc
    if not isinstance(token, str) or not token:
        raise PermanentError(TOKEN_RESPONSE_INVALID.format(keys=sorted(data)))
    if expires_at.tzinfo is None:
        # GitHub writes UTC ("...Z"); a naive timestamp would otherwise be local time.
        expires_at = expires_at.replace(tzinfo=datetime.UTC)
    return InstallationToken(token=token, expires_at=expires_at.timestamp())


TokenFetcher = Callable[[int], Awaitable[InstallationToken]]


class InstallationTokens:
    """Installation id → token cache that refreshes each entry once, when needed."""

    def __init__(
        self,
        fetch: TokenFetcher,
        *,
        clock: Callable[[], float] = time.time,
        refresh_margin: float = TOKEN_REFRESH_MARGIN_SECONDS,
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._refresh_margin = refresh_margin
        self._tokens: dict[int, InstallationToken] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        # When GitHub last gave a token (any installation; None: not yet): readiness
        # reads it as proof that the App's key and id still work.
        self.last_fetched_at: float | None = None

    async def get(self, installation_id: int) -> str:
        """A token valid for at least ``refresh_margin`` more seconds."""
        fresh = self._fresh(installation_id)
        if fresh is not None:
            return fresh
        lock = self._locks.setdefault(installation_id, asyncio.Lock())
        async with lock:
            # Whoever held the lock before us may have refreshed it already.
            fresh = self._fresh(installation_id)
            if fresh is not None:
                return fresh
            # If this raises, nothing is stored: the next caller tries again.
            token = await self._fetch(installation_id)
            self._tokens[installation_id] = token
            self.last_fetched_at = self._clock()
            return token.token

    def invalidate(self, installation_id: int, token: str | None = None) -> None:
        """Drop the cached token (only if it is still ``token``, when given).

        Comparing with the rejected token keeps a concurrent task's freshly
        fetched replacement from being thrown away.
        """
        cached = self._tokens.get(installation_id)
        if cached is not None and (token is None or cached.token == token):
            del self._tokens[installation_id]

    def _fresh(self, installation_id: int) -> str | None:
        cached = self._tokens.get(installation_id)
        if cached is None or cached.expires_at - self._clock() < self._refresh_margin:
            return None
        return cached.token
