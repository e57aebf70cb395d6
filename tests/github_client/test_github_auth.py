from __future__ import annotations

import asyncio

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from bot.core.errors import PermanentError
from bot.github.auth import (
    NOT_AN_RSA_KEY,
    TOKEN_REFRESH_MARGIN_SECONDS,
    InstallationToken,
    InstallationTokens,
    make_app_jwt,
    parse_installation_token,
)

from .github_fakes import APP_ID, FakeClock

NOW = 1_700_000_000.0


def test_app_jwt_claims_are_backdated_and_short_lived(rsa_keys: tuple[str, str]) -> None:
    private, public = rsa_keys
    token = make_app_jwt(APP_ID, private, NOW + 0.7)
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(
        token, public, algorithms=["RS256"], options={"verify_exp": False, "verify_iat": False}
    )
    assert header["alg"] == "RS256"
    assert claims == {"iss": APP_ID, "iat": NOW - 60, "exp": NOW + 540}
    assert claims["exp"] - NOW <= 10 * 60


def test_parse_installation_token_reads_utc_expiry() -> None:
    parsed = parse_installation_token({"token": "ghs_x", "expires_at": "2023-11-14T22:13:20Z"})
    assert parsed == InstallationToken("ghs_x", NOW)


@pytest.mark.parametrize(
    "answer",
    [
        {"expires_at": "2023-11-14T22:13:20Z"},
        {"token": "ghs_x"},
        {"token": "ghs_x", "expires_at": "soon"},
        {"token": "", "expires_at": "2023-11-14T22:13:20Z"},
        ["not", "a", "dict"],
    ],
)
def test_parse_installation_token_rejects_malformed_answers(answer: object) -> None:
    with pytest.raises(PermanentError):
        parse_installation_token(answer)


class CountingFetch:
    """A token source whose tokens last an hour from the fake clock's now."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[int] = []
        self.failures = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, installation_id: int) -> InstallationToken:
        self.calls.append(installation_id)
        await self.gate.wait()
        if self.failures:
            self.failures -= 1
            raise ConnectionError("token endpoint unreachable")
        return InstallationToken(f"t{installation_id}-{len(self.calls)}", self.clock() + 3600)


@pytest.fixture
def fetch(clock: FakeClock) -> CountingFetch:
    return CountingFetch(clock)


@pytest.fixture
def tokens(fetch: CountingFetch, clock: FakeClock) -> InstallationTokens:
    return InstallationTokens(fetch, clock=clock)


async def test_token_is_cached_per_installation(
    tokens: InstallationTokens, fetch: CountingFetch
) -> None:
    assert await tokens.get(1) == "t1-1"
    assert await tokens.get(1) == "t1-1"
    assert await tokens.get(2) == "t2-2"
    assert fetch.calls == [1, 2]


async def test_token_refreshed_once_fewer_than_five_minutes_remain(
    tokens: InstallationTokens, fetch: CountingFetch, clock: FakeClock
) -> None:
    await tokens.get(1)
    clock.advance(3600 - TOKEN_REFRESH_MARGIN_SECONDS)  # exactly 5 min left
    assert await tokens.get(1) == "t1-1"
    clock.advance(1)
    assert await tokens.get(1) == "t1-2"
    assert fetch.calls == [1, 1]


async def test_concurrent_callers_share_one_refresh(
    tokens: InstallationTokens, fetch: CountingFetch
) -> None:
    fetch.gate.clear()
    waiting = [asyncio.ensure_future(tokens.get(7)) for _ in range(20)]
    await asyncio.sleep(0)  # every caller is now queued behind the one fetching
    fetch.gate.set()
    assert set(await asyncio.gather(*waiting)) == {"t7-1"}
    assert fetch.calls == [7]


async def test_failed_refresh_is_not_cached(
    tokens: InstallationTokens, fetch: CountingFetch
) -> None:
    fetch.failures = 1
    with pytest.raises(ConnectionError):
        await tokens.get(1)
    assert await tokens.get(1) == "t1-2"
    assert fetch.calls == [1, 1]


async def test_invalidate_keeps_a_token_that_already_replaced_the_rejected_one(
    tokens: InstallationTokens, fetch: CountingFetch
) -> None:
    await tokens.get(1)
    tokens.invalidate(1, "some older token")
    assert await tokens.get(1) == "t1-1"
    tokens.invalidate(1, "t1-1")
    assert await tokens.get(1) == "t1-2"
    tokens.invalidate(1)
    assert await tokens.get(1) == "t1-3"


def test_an_app_key_that_is_not_rsa_is_refused_with_a_clear_error() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with pytest.raises(PermanentError) as raised:
        make_app_jwt(APP_ID, pem, NOW)
    assert str(raised.value) == NOT_AN_RSA_KEY.format(kind=type(key).__name__)
