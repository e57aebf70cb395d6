"""The retry decision on its own, for the header shapes the fake server does not cover."""

from __future__ import annotations

import http

import gidgethub
import pytest

from bot.core.errors import TransientError
from bot.core.http_policy import RequestPolicy
from bot.github.client import graphql_url, retry_delay

POLICY = RequestPolicy(clock=lambda: 1000.0, max_retries=2, max_wait=90.0)


def failure(status: int, message: str = "", **headers: str) -> gidgethub.HTTPException:
    args = (message,) if message else ()
    return gidgethub.BadRequest(http.HTTPStatus(status), *args, headers=headers)


def delay(exc: gidgethub.HTTPException, *, method: str = "GET", attempt: int = 1) -> float | None:
    return retry_delay(POLICY, method=method, url="/x", exc=exc, attempt=attempt)


def test_unparseable_retry_after_falls_back_to_the_reset_header() -> None:
    exc = failure(
        403,
        **{"Retry-After": "soon", "X-RateLimit-Remaining": "0"},
        **{"X-RateLimit-Reset": "1010"},
    )
    assert delay(exc) == 11.0


def test_reset_already_passed_waits_only_the_margin() -> None:
    exc = failure(403, **{"x-ratelimit-remaining": "0", "x-ratelimit-reset": "990"})
    assert delay(exc) == 1.0


def test_remaining_quota_means_a_403_is_not_a_primary_limit() -> None:
    exc = failure(
        403,
        "Must have admin rights",
        **{"x-ratelimit-remaining": "12", "x-ratelimit-reset": "1010"},
    )
    assert delay(exc) is None


def test_403_whose_message_names_a_rate_limit_backs_off() -> None:
    exc = failure(403, "You have exceeded a secondary rate limit.")
    assert delay(exc) == 60.0


def test_rate_limit_beyond_max_retries_is_transient() -> None:
    with pytest.raises(TransientError) as raised:
        delay(failure(429, **{"retry-after": "2"}), attempt=3)
    assert raised.value.retry_after == 2.0


REPO = "https://api.github.com/repos/o/r"


@pytest.mark.parametrize(
    ("method", "url", "safe"),
    [
        ("GET", f"{REPO}/pulls?head=o:b", True),
        ("HEAD", f"{REPO}", True),
        ("POST", f"{REPO}/git/blobs", True),
        ("POST", f"{REPO}/git/trees", True),
        ("POST", f"{REPO}/git/commits", True),
        ("POST", f"{REPO}/issues/7/labels", True),
        ("POST", f"{REPO}/issues/comments/99/reactions", True),
        ("PATCH", f"{REPO}/git/refs/heads/followup-bot/bump/fa", True),
        ("PATCH", f"{REPO}/pulls/7", True),
        ("PATCH", f"{REPO}/issues/7", True),
        ("PATCH", f"{REPO}/issues/comments/99", True),
        ("DELETE", f"{REPO}/issues/7/labels/ready", True),
        ("POST", "https://ghe.example.test/api/v3/repos/o/r/git/blobs", True),
        # creations: a 5xx does not say whether they happened
        ("POST", f"{REPO}/pulls", False),
        ("POST", f"{REPO}/issues/7/comments", False),
        ("POST", f"{REPO}/issues", False),
        ("POST", f"{REPO}/git/refs", False),
        ("PUT", f"{REPO}/pulls/7/merge", False),
        ("POST", "https://api.github.com/graphql", False),
        ("POST", f"{REPO}/git/blobs/extra", False),
    ],
)
def test_server_errors_retried_only_where_a_repeat_is_harmless(
    method: str, url: str, safe: bool
) -> None:
    exc = gidgethub.GitHubBroken(http.HTTPStatus(503))
    expected = 1.0 if safe else None
    assert retry_delay(POLICY, method=method, url=url, exc=exc, attempt=1) == expected


def test_server_error_backoff_is_capped() -> None:
    policy = RequestPolicy(max_retries=10)
    exc = gidgethub.GitHubBroken(http.HTTPStatus(500))
    assert retry_delay(policy, method="GET", url="/x", exc=exc, attempt=8) == 8.0


def test_client_errors_are_not_retried() -> None:
    assert delay(failure(404, "Not Found")) is None
    assert delay(failure(422, "Validation Failed")) is None


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://ghe.example.test/api/v3/", "https://ghe.example.test/api/graphql"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/graphql"),
    ],
)
def test_graphql_url_follows_the_rest_base_url(base_url: str, expected: str) -> None:
    assert graphql_url(base_url) == expected


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_retry_after_nobody_can_wait_falls_back_to_the_reset_header(value: str) -> None:
    exc = failure(
        429, **{"Retry-After": value, "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1010"}
    )
    assert delay(exc) == 11.0


def test_a_request_timeout_is_retried_like_a_server_error() -> None:
    assert delay(failure(408), attempt=2) == 2.0
    assert delay(failure(408), method="POST") is None  # "/x" is no retry-safe write
