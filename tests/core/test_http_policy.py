"""The HTTP policy both clients share, on its own: every branch, and its laws."""

from __future__ import annotations

import asyncio
import logging
import math
import time

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict

from bot.core.errors import TransientError
from bot.core.http_policy import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_WAIT,
    DEFAULT_TIMEOUT,
    SERVER_ERROR_BACKOFF_CAP,
    TRANSPORT_ERRORS,
    RequestPolicy,
    exponential_backoff,
    header,
    origin,
    parse_seconds,
    server_side,
)

LAWS = settings(max_examples=300, deadline=None)

attempts = st.integers(min_value=-5, max_value=5000)
lengths = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
fractions = st.floats(min_value=0.0, max_value=1.0)


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


# --- backoff ---------------------------------------------------------------------------


def test_backoff_doubles_from_one_second_up_to_eight() -> None:
    assert [exponential_backoff(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


@pytest.mark.parametrize(
    ("attempt", "base", "cap", "jitter", "expected"),
    [
        (0, 2.0, 600.0, 1.0, 2.0),  # an attempt below 1 counts as the first
        (-3, 2.0, 600.0, 1.0, 2.0),
        (10, 2.0, 600.0, 0.25, 150.0),
        (4, 2.0, 600.0, 0.0, 0.0),
        (1, -1.0, 8.0, 1.0, 0.0),  # never negative
        (1, 1.0, -8.0, 1.0, 0.0),
        (10**6, 3.0, 10.0, 1.0, 10.0),  # no overflow however many attempts
    ],
)
def test_backoff_edges(
    attempt: int, base: float, cap: float, jitter: float, expected: float
) -> None:
    assert exponential_backoff(attempt, base=base, cap=cap, jitter=jitter) == expected


@LAWS
@given(attempts, lengths, lengths, fractions)
def test_backoff_stays_between_zero_and_its_cap(
    attempt: int, base: float, cap: float, jitter: float
) -> None:
    assert 0.0 <= exponential_backoff(attempt, base=base, cap=cap, jitter=jitter) <= cap


@LAWS
@given(attempts, lengths, lengths, fractions)
def test_backoff_never_shrinks_from_one_attempt_to_the_next(
    attempt: int, base: float, cap: float, jitter: float
) -> None:
    # For any one draw of the jitter, so also in expectation (full jitter: half of it).
    now = exponential_backoff(attempt, base=base, cap=cap, jitter=jitter)
    after = exponential_backoff(attempt + 1, base=base, cap=cap, jitter=jitter)
    assert now <= after


@LAWS
@given(attempts, lengths, lengths, fractions)
def test_jitter_only_shortens_the_wait(
    attempt: int, base: float, cap: float, jitter: float
) -> None:
    full = exponential_backoff(attempt, base=base, cap=cap)
    assert exponential_backoff(attempt, base=base, cap=cap, jitter=jitter) <= full


@LAWS
@given(st.integers(min_value=1, max_value=60), lengths, lengths)
def test_backoff_reaches_its_cap_or_doubles(attempt: int, base: float, cap: float) -> None:
    now = exponential_backoff(attempt, base=base, cap=cap)
    after = exponential_backoff(attempt + 1, base=base, cap=cap)
    assert after == cap or math.isclose(after, 2 * now)


# --- what counts as the peer's failure -------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        *[(status, True) for status in (500, 502, 503, 599, 408)],
        *[(status, False) for status in (200, 304, 400, 404, 429, 499)],
    ],
)
def test_server_side(status: int, expected: bool) -> None:
    assert server_side(status) is expected


def test_transport_errors_are_no_answer_at_all() -> None:
    assert isinstance(TimeoutError(), TRANSPORT_ERRORS)
    assert isinstance(aiohttp.ServerDisconnectedError(), TRANSPORT_ERRORS)
    assert not isinstance(ValueError(), TRANSPORT_ERRORS)


# --- headers and values ---------------------------------------------------------------


def test_header_ignores_the_case_of_names() -> None:
    plain = {"Retry-After": "3", "X-Other": "x"}
    assert header(plain, "retry-after") == "3"
    assert header(plain, "RETRY-AFTER") == "3"
    assert header(plain, "link") is None
    assert header(CIMultiDict({"ratelimit-reset": "9"}), "RateLimit-Reset") == "9"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("12", 12.0),
        ("4.5", 4.5),
        (" 7 ", 7.0),
        ("-3", -3.0),
        (9, 9.0),
        (2.5, 2.5),
        ("soon", None),
        ("", None),
        ("nan", None),
        ("inf", None),
        (float("-inf"), None),
        (True, None),
        (None, None),
        ([1], None),
    ],
)
def test_parse_seconds(value: object, expected: float | None) -> None:
    assert parse_seconds(value) == expected


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_parse_seconds_reads_back_any_finite_number(seconds: float) -> None:
    assert parse_seconds(repr(seconds)) == seconds
    assert parse_seconds(seconds) == seconds


def test_origin_is_scheme_and_host_whatever_the_case() -> None:
    assert origin("HTTPS://API.Example.test:8443/v2/x?y=1") == ("https", "api.example.test:8443")
    assert origin("https://api.example.test/a") == origin("https://api.example.test/b?c")
    assert origin("https://api.example.test/a") != origin("http://api.example.test/a")
    assert origin("https://api.example.test/a") != origin("https://storage.example.test/a")


# --- the policy -------------------------------------------------------------------------


def test_policy_defaults() -> None:
    policy = RequestPolicy()
    assert (policy.timeout, policy.max_retries, policy.max_wait) == (30.0, 4, 90.0)
    assert (DEFAULT_TIMEOUT, DEFAULT_MAX_RETRIES, DEFAULT_MAX_WAIT) == (30.0, 4, 90.0)
    assert policy.clock is time.time
    assert policy.sleep is asyncio.sleep


def test_timeouts() -> None:
    policy = RequestPolicy(timeout=12.0)
    assert policy.client_timeout() == aiohttp.ClientTimeout(total=12.0)
    stream = policy.stream_timeout()
    assert (stream.total, stream.sock_connect, stream.sock_read) == (None, 12.0, 12.0)


def test_backoff_until_the_retries_are_spent() -> None:
    policy = RequestPolicy(max_retries=3)
    assert [policy.backoff(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, None, None]
    assert RequestPolicy(max_retries=0).backoff(1) is None


def test_a_configured_backoff_doubles_from_its_base_up_to_eight_times_it() -> None:
    policy = RequestPolicy(max_retries=6, backoff_base=0.25)
    assert [policy.backoff(n) for n in range(1, 7)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert RequestPolicy(backoff_base=0.0).backoff(1) == 0.0


@LAWS
@given(st.integers(min_value=0, max_value=20), st.integers(min_value=1, max_value=40))
def test_backoff_retries_at_most_max_retries_times(max_retries: int, attempt: int) -> None:
    delay = RequestPolicy(max_retries=max_retries).backoff(attempt)
    assert (delay is None) == (attempt > max_retries)
    assert delay is None or 0.0 < delay <= SERVER_ERROR_BACKOFF_CAP


def rate_limit(
    policy: RequestPolicy,
    *,
    attempt: int = 1,
    retry_after: float = 10.0,
    sleep_for: float | None = None,
    cause: BaseException | None = None,
) -> float:
    return policy.rate_limit_delay(
        service="Peer",
        request="GET /x",
        attempt=attempt,
        retry_after=retry_after,
        sleep_for=sleep_for,
        cause=cause,
    )


def test_a_rate_limit_within_the_budget_is_waited_out() -> None:
    policy = RequestPolicy(max_retries=2, max_wait=60.0)
    assert rate_limit(policy, retry_after=10.0) == 10.0
    assert rate_limit(policy, retry_after=60.0, attempt=2) == 60.0  # exactly max_wait still waits
    assert rate_limit(policy, retry_after=0.0) == 0.0
    # The sleep may add a margin to what is reported.
    assert rate_limit(policy, retry_after=10.0, sleep_for=11.0) == 11.0


def test_a_rate_limit_too_long_goes_back_to_the_inbox() -> None:
    policy = RequestPolicy(max_retries=2, max_wait=60.0)
    cause = ValueError("the answer")
    with pytest.raises(TransientError, match=r"^Peer rate limit on GET /x: retry in 61 s$") as e:
        rate_limit(policy, retry_after=60.7, sleep_for=61.7, cause=cause)
    assert e.value.retry_after == 60.7
    assert e.value.__cause__ is cause


def test_a_rate_limit_beyond_the_retries_goes_back_to_the_inbox() -> None:
    policy = RequestPolicy(max_retries=2, max_wait=60.0)
    with pytest.raises(TransientError, match="retry in 5 s") as raised:
        rate_limit(policy, attempt=3, retry_after=5.0)
    assert raised.value.retry_after == 5.0
    assert raised.value.__cause__ is None


@LAWS
@given(
    st.integers(min_value=0, max_value=10),
    st.integers(min_value=1, max_value=20),
    lengths,
    lengths,
)
def test_a_worker_never_sleeps_past_the_budget(
    max_retries: int, attempt: int, max_wait: float, retry_after: float
) -> None:
    policy = RequestPolicy(max_retries=max_retries, max_wait=max_wait)
    try:
        outcome: float | TransientError = rate_limit(
            policy, attempt=attempt, retry_after=retry_after
        )
    except TransientError as exc:
        outcome = exc
    if isinstance(outcome, TransientError):
        # Handed back with the peer's wait, and only when the budget is spent.
        assert outcome.retry_after == retry_after
        assert attempt > max_retries or retry_after > max_wait
    else:
        assert outcome == retry_after <= max_wait
        assert attempt <= max_retries


async def test_pause_logs_and_sleeps_through_the_policy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sleeps = Sleeps()
    policy = RequestPolicy(sleep=sleeps)
    with caplog.at_level(logging.DEBUG, logger="bot.core.http_policy"):
        await policy.pause(2.0, service="Peer", answer=503, request="GET /x", attempt=1)
    assert sleeps.calls == [2.0]
    assert caplog.messages == ["Peer answered 503 to GET /x (attempt 1); retrying in 2.0 s"]
