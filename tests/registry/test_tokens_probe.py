"""Token responses, the token cache's expiry, and what a probe says."""

from __future__ import annotations

import pytest

from bot.registry.probe import UNAUTHORIZED, UNEXPECTED, UNREACHABLE, TagProbe
from bot.registry.reference import ImageRef
from bot.registry.tokens import (
    DEFAULT_EXPIRES_IN,
    IssuedToken,
    TokenCache,
    TokenKey,
    read_token,
    usable_for,
)

from ..github_client.github_fakes import FakeClock

REF = ImageRef("registry.example", "ns/repo", "tag")
KEY = TokenKey("https://auth.example/token", "registry.example", "repository:ns/repo:pull")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"token": "t", "expires_in": 300}, IssuedToken("t", 300.0)),
        ({"access_token": "a", "expires_in": "120"}, IssuedToken("a", 120.0)),
        ({"token": "", "access_token": "a"}, IssuedToken("a", DEFAULT_EXPIRES_IN)),
        ({"token": "t", "expires_in": 0}, IssuedToken("t", DEFAULT_EXPIRES_IN)),
        ({"token": "t", "expires_in": True}, IssuedToken("t", DEFAULT_EXPIRES_IN)),
        ({"token": 5}, None),
        ({}, None),
        (["token"], None),
    ],
)
def test_read_token(body: object, expected: IssuedToken | None) -> None:
    assert read_token(body) == expected


def test_a_token_is_used_until_a_margin_before_it_expires() -> None:
    assert usable_for(300) == 290
    assert usable_for(60) == 50
    assert usable_for(10) == 5  # short-lived tokens keep half their life


def test_cache_expires_drops_and_locks_per_key() -> None:
    clock = FakeClock(1000.0)
    cache = TokenCache(clock)
    assert cache.get(KEY) is None
    cache.put(KEY, IssuedToken("t1", 60))
    clock.advance(49.9)
    assert cache.get(KEY) == "t1"
    clock.advance(0.1)
    assert cache.get(KEY) is None
    cache.put(KEY, IssuedToken("t2", 60))
    cache.drop(KEY, "t1")  # an older token: the newer one stays
    assert cache.get(KEY) == "t2"
    cache.drop(KEY, "t2")
    assert cache.get(KEY) is None
    cache.drop(KEY, "t2")  # nothing left to drop
    assert cache.lock(KEY) is cache.lock(KEY)
    assert cache.lock(KEY) is not cache.lock(TokenKey(KEY.realm, KEY.service, "other"))


@pytest.mark.parametrize(
    ("status", "error", "exists", "cell"),
    [
        (200, None, True, "200"),
        (404, None, False, "404"),
        (401, UNAUTHORIZED, None, "401 unauthorized"),
        (302, None, None, "302"),
        (
            None,
            UNREACHABLE.format(reason="connection refused"),
            None,
            "unreachable: connection refused",
        ),
        (None, None, None, UNEXPECTED),
    ],
)
def test_probe_exists_and_describe(
    status: int | None, error: str | None, exists: bool | None, cell: str
) -> None:
    probe = TagProbe(REF, status, error)
    assert probe.exists is exists
    assert probe.describe() == cell
