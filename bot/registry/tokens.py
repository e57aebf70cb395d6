"""Bearer tokens from a registry's token endpoint, kept until shortly before they expire.

A registry that challenges with ``Bearer`` wants a token per (realm, service, scope):
probing many tags of one repository must fetch it once, not once per tag (the endpoint
is rate limited too). ``TokenCache`` is pure but for its lock per key, which makes
concurrent probes of one repository wait for one fetch instead of each starting one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from bot.core.http_policy import parse_seconds

# The token spec's default when the endpoint does not say how long a token lives.
DEFAULT_EXPIRES_IN = 60.0
# A token is dropped this long before it expires, so it never expires in flight; a
# shorter-lived token keeps half its life.
EXPIRY_MARGIN = 10.0


@dataclass(frozen=True)
class TokenKey:
    """What a token is good for; ``service`` and ``scope`` are "" when the challenge had none."""

    realm: str
    service: str
    scope: str


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires_in: float


def read_token(body: object) -> IssuedToken | None:
    """``token`` (or OAuth2's ``access_token``) and ``expires_in`` from the endpoint's JSON."""
    if not isinstance(body, dict):
        return None
    token = body.get("token") or body.get("access_token")
    if not isinstance(token, str) or not token:
        return None
    expires_in = parse_seconds(body.get("expires_in"))
    if expires_in is None or expires_in <= 0:
        expires_in = DEFAULT_EXPIRES_IN
    return IssuedToken(token, expires_in)


def usable_for(expires_in: float) -> float:
    """How long a token that lives ``expires_in`` seconds is used."""
    return max(expires_in - EXPIRY_MARGIN, expires_in / 2)


class TokenCache:
    """Tokens by key until they are due for renewal, on the caller's clock."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._tokens: dict[TokenKey, tuple[str, float]] = {}
        self._locks: dict[TokenKey, asyncio.Lock] = {}

    def get(self, key: TokenKey) -> str | None:
        entry = self._tokens.get(key)
        if entry is None:
            return None
        token, renew_at = entry
        if self._clock() >= renew_at:
            del self._tokens[key]
            return None
        return token

    def put(self, key: TokenKey, issued: IssuedToken) -> None:
        self._tokens[key] = (issued.token, self._clock() + usable_for(issued.expires_in))

    def drop(self, key: TokenKey, token: str) -> None:
        """Forget ``token`` (the registry refused it), unless another already replaced it."""
        entry = self._tokens.get(key)
        if entry is not None and entry[0] == token:
            del self._tokens[key]

    def lock(self, key: TokenKey) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())
