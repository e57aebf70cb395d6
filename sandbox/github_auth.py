"""App JWTs, installation tokens and per-token rate-limit buckets, as GitHub checks them."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

import jwt

TOKEN_LIFETIME = 3600
# GitHub refuses JWTs that live longer than ten minutes; it tolerates a minute of skew.
MAX_JWT_LIFETIME = 600
CLOCK_SKEW = 60
RATE_LIMIT = 5000
RATE_WINDOW = 3600

JWT_INVALID = "A JSON web token could not be decoded"
JWT_EXPIRED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time "
    "at which the assertion expires"
)
JWT_TOO_LONG = "'Expiration time' claim ('exp') is too far in the future"
JWT_WRONG_ISSUER = "'Issuer' claim ('iss') must be an Integer"
BAD_CREDENTIALS = "Bad credentials"


class AuthError(Exception):
    """Answered as a 401 with GitHub's message."""


@dataclass
class InstallationToken:
    token: str
    installation_id: int
    expires_at: float


@dataclass
class RateBucket:
    limit: int
    used: int
    reset: int

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)


def parse_authorization(header: str | None) -> tuple[str, str] | None:
    """``("bearer"|"token", credential)`` from an Authorization header."""
    if not header:
        return None
    scheme, _, credential = header.strip().partition(" ")
    scheme = scheme.lower()
    if scheme not in ("bearer", "token") or not credential.strip():
        return None
    return scheme, credential.strip()


class AppAuth:
    """Checks App JWTs, mints and checks installation tokens, keeps rate buckets."""

    def __init__(self, app_id: str, public_key_pem: str, clock: Callable[[], float]) -> None:
        self.app_id = app_id
        self._public_key = public_key_pem
        self._clock = clock
        self._tokens: dict[str, InstallationToken] = {}
        self._buckets: dict[str, RateBucket] = {}

    def verify_jwt(self, token: str) -> None:
        now = self._clock()
        try:
            claims = jwt.decode(
                token,
                self._public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except jwt.PyJWTError as exc:
            raise AuthError(JWT_INVALID) from exc
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int | float) or not isinstance(exp, int | float):
            raise AuthError(JWT_INVALID)
        if str(claims.get("iss")) != self.app_id:
            raise AuthError(JWT_WRONG_ISSUER)
        if exp <= now:
            raise AuthError(JWT_EXPIRED)
        if exp - iat > MAX_JWT_LIFETIME + CLOCK_SKEW or iat > now + CLOCK_SKEW:
            raise AuthError(JWT_TOO_LONG)

    def mint(self, installation_id: int) -> InstallationToken:
        minted = InstallationToken(
            token="ghs_" + secrets.token_urlsafe(27),
            installation_id=installation_id,
            expires_at=self._clock() + TOKEN_LIFETIME,
        )
        self._tokens[minted.token] = minted
        return minted

    def check_token(self, token: str) -> InstallationToken:
        found = self._tokens.get(token)
        if found is None or found.expires_at <= self._clock():
            raise AuthError(BAD_CREDENTIALS)
        return found

    def bucket(self, key: str) -> RateBucket:
        now = int(self._clock())
        bucket = self._buckets.get(key)
        if bucket is None or bucket.reset <= now:
            bucket = RateBucket(limit=RATE_LIMIT, used=0, reset=now + RATE_WINDOW)
            self._buckets[key] = bucket
        return bucket
