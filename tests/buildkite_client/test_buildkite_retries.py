"""Failures: 4xx, 5xx, 429, timeouts, and the job retry that is never repeated."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict

from bot.buildkite.client import BuildkiteClient
from bot.buildkite.decisions import (
    UNSPECIFIED_RESET,
    encode_query,
    error_message,
    next_link,
    rate_limit_wait,
    retry_delay,
)
from bot.buildkite.errors import BuildkiteError, JobNotRetryable
from bot.core.errors import PermanentError, TransientError, is_transient
from bot.core.http_policy import RequestPolicy

from ..github_client.github_fakes import RecordingSleep
from .buildkite_fakes import PIPELINE, FakeBuildkite, MakeClient, json_answer, raw_answer

BUILD = PIPELINE + "/builds/7"
RETRY = BUILD + "/jobs/job-1/retry"
NEW_JOB = {"id": "job-2", "state": "scheduled", "retry_type": "manual"}
NOW = 1_700_000_000.0


# --- the job retry -------------------------------------------------------------------


async def test_retry_job_puts_and_returns_the_new_job(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("PUT", RETRY, json_answer(NEW_JOB))
    assert await client.retry_job("vllm", "ci", 7, "job-1") == NEW_JOB
    assert len(fake_buildkite.seen("PUT", RETRY)) == 1


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "This job has already been retried"),
        (400, "Only failed, timed out or canceled jobs can be retried"),
        (422, "Job cannot be retried"),
    ],
)
async def test_retry_job_refused_is_a_typed_error_with_buildkites_words(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, status: int, message: str
) -> None:
    fake_buildkite.answer("PUT", RETRY, json_answer({"message": message}, status))
    with pytest.raises(JobNotRetryable) as caught:
        await client.retry_job("vllm", "ci", 7, "job-1")
    assert (caught.value.status, caught.value.message) == (status, message)
    assert message in str(caught.value)
    assert not is_transient(caught.value)


async def test_retry_job_forbidden_is_a_plain_buildkite_error(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite
) -> None:
    fake_buildkite.answer("PUT", RETRY, json_answer({"message": "Forbidden"}, 403))
    with pytest.raises(BuildkiteError) as caught:
        await client.retry_job("vllm", "ci", 7, "job-1")
    assert type(caught.value) is BuildkiteError
    assert caught.value.status == 403


async def test_retry_job_is_never_repeated_on_a_server_error(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    fake_buildkite.answer("PUT", RETRY, json_answer({}, 502), json_answer(NEW_JOB))
    with pytest.raises(TransientError, match="502"):
        await client.retry_job("vllm", "ci", 7, "job-1")
    assert len(fake_buildkite.seen("PUT", RETRY)) == 1
    assert sleeps.calls == []


async def test_retry_job_is_not_repeated_after_a_timeout(
    make_client: MakeClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    fake_buildkite.hang("PUT", RETRY)
    with pytest.raises(TransientError, match="timed out"):
        await make_client(timeout=0.05).retry_job("vllm", "ci", 7, "job-1")
    assert len(fake_buildkite.seen("PUT", RETRY)) == 1
    assert sleeps.calls == []


async def test_retry_job_rate_limited_is_sent_again(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    # A 429 means the request was not processed: sending it again cannot retry twice.
    limited = json_answer({"message": "rate limited"}, 429, {"RateLimit-Reset": "3"})
    fake_buildkite.answer("PUT", RETRY, limited, json_answer(NEW_JOB))
    assert await client.retry_job("vllm", "ci", 7, "job-1") == NEW_JOB
    assert sleeps.calls == [3.0]


# --- 429 ------------------------------------------------------------------------------


async def test_rate_limit_reset_soon_is_slept_then_retried(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    limited = json_answer({"message": "slow down"}, 429, {"RateLimit-Reset": "17"})
    fake_buildkite.answer("GET", BUILD, limited, json_answer({"number": 7}))
    assert await client.build("vllm", "ci", 7) == {"number": 7}
    assert sleeps.calls == [17.0]
    assert client.requests_made == 2


async def test_rate_limit_reset_far_is_a_transient_error_with_retry_after(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    limited = json_answer({"message": "slow down"}, 429, {"RateLimit-Reset": "600"})
    fake_buildkite.answer("GET", BUILD, limited, json_answer({"number": 7}))
    with pytest.raises(TransientError) as caught:
        await client.build("vllm", "ci", 7)
    assert caught.value.retry_after == 600.0
    assert sleeps.calls == []
    assert len(fake_buildkite.seen("GET", BUILD)) == 1


async def test_rate_limit_reset_from_the_body(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    limited = json_answer({"message": "slow down", "reset": 12}, 429)
    fake_buildkite.answer("GET", BUILD, limited, json_answer({"number": 7}))
    assert await client.build("vllm", "ci", 7) == {"number": 7}
    assert sleeps.calls == [12.0]


async def test_a_persistent_rate_limit_gives_up_after_max_retries(
    make_client: MakeClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    fake_buildkite.answer("GET", BUILD, json_answer({}, 429, {"RateLimit-Reset": "5"}))
    with pytest.raises(TransientError) as caught:
        await make_client(max_retries=2).build("vllm", "ci", 7)
    assert caught.value.retry_after == 5.0
    assert sleeps.calls == [5.0, 5.0]
    assert len(fake_buildkite.seen("GET", BUILD)) == 3


# --- 5xx, timeouts and 4xx on reads ----------------------------------------------------


async def test_server_errors_on_a_read_are_retried_with_backoff(
    client: BuildkiteClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    fake_buildkite.answer(
        "GET", BUILD, raw_answer(b"", 502), raw_answer(b"", 503), json_answer({"number": 7})
    )
    assert await client.build("vllm", "ci", 7) == {"number": 7}
    assert sleeps.calls == [1.0, 2.0]


async def test_server_error_backoff_is_configurable(
    make_client: MakeClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    fake_buildkite.answer("GET", BUILD, raw_answer(b"", 502), json_answer({"number": 7}))
    assert await make_client(retry_backoff=0.5).build("vllm", "ci", 7) == {"number": 7}
    assert sleeps.calls == [0.5]


async def test_server_error_retries_are_bounded(
    make_client: MakeClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    fake_buildkite.answer("GET", BUILD, raw_answer(b"<html>bad gateway</html>", 502))
    with pytest.raises(TransientError, match="502") as caught:
        await make_client(max_retries=2).build("vllm", "ci", 7)
    assert caught.value.retry_after is None
    assert len(fake_buildkite.seen("GET", BUILD)) == 3
    assert sleeps.calls == [1.0, 2.0]


async def test_a_read_that_times_out_is_retried_then_transient(
    make_client: MakeClient, fake_buildkite: FakeBuildkite, sleeps: RecordingSleep
) -> None:
    fake_buildkite.hang("GET", BUILD)
    with pytest.raises(TransientError, match=r"did not answer GET .*timed out"):
        await make_client(timeout=0.05, max_retries=1).build("vllm", "ci", 7)
    assert len(fake_buildkite.seen("GET", BUILD)) == 2
    assert sleeps.calls == [1.0]


async def test_an_unreachable_buildkite_is_transient(
    make_client: MakeClient, sleeps: RecordingSleep
) -> None:
    # Port 1 on loopback: nothing listens there, so the connection is refused.
    client = make_client(api_url="http://127.0.0.1:1/v2", max_retries=1)
    with pytest.raises(TransientError, match="ClientConnectorError"):
        await client.build("vllm", "ci", 7)
    assert sleeps.calls == [1.0]
    assert client.requests_made == 2


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (404, b'{"message": "No build found"}', "No build found"),
        (401, b'{"message": "Authentication required"}', "Authentication required"),
        (403, b"forbidden, plainly", "forbidden, plainly"),
        (410, b"", "(no message)"),
    ],
)
async def test_client_errors_are_permanent_and_not_retried(
    client: BuildkiteClient,
    fake_buildkite: FakeBuildkite,
    sleeps: RecordingSleep,
    status: int,
    body: bytes,
    message: str,
) -> None:
    fake_buildkite.answer("GET", BUILD, raw_answer(body, status))
    with pytest.raises(BuildkiteError) as caught:
        await client.build("vllm", "ci", 7)
    assert isinstance(caught.value, PermanentError)
    assert (caught.value.status, caught.value.message) == (status, message)
    assert f"answered {status} to GET http://" in str(caught.value)
    assert BUILD in str(caught.value)
    assert len(fake_buildkite.seen("GET", BUILD)) == 1
    assert sleeps.calls == []


# --- the pure pieces -------------------------------------------------------------------


def test_encode_query() -> None:
    assert encode_query([]) == ""
    assert (
        encode_query([("state[]", "failed"), ("state[]", "timed_out"), ("branch", "a/b c&d=é")])
        == "state[]=failed&state[]=timed_out&branch=a%2Fb%20c%26d%3D%C3%A9"
    )


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ('<https://x/b?page=2>; rel="next"', "https://x/b?page=2"),
        (
            '<https://x/b?page=1>; rel="prev", <https://x/b?page=3>; rel="next"',
            "https://x/b?page=3",
        ),
        ('<https://x/b?page=9>; rel="last"', None),
        ("<https://x/b?page=2>; rel=next", "https://x/b?page=2"),
        ('<https://x/b?page=2>; title="n"; REL="prev next"', "https://x/b?page=2"),
        ('<https://x/b?page=2>; rel="nextish"', None),
    ],
)
def test_next_link(header: str | None, expected: str | None) -> None:
    assert next_link(header) == expected


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({"RateLimit-Reset": "42"}, b"", 42.0),
        ({"ratelimit-reset": "4.5"}, b"", 4.5),
        ({"RateLimit-Reset": "10", "RateLimit-User-Reset": "30"}, b"", 30.0),
        ({"RateLimit-Reset": "-3"}, b"", 0.0),
        ({"RateLimit-Reset": str(NOW + 25)}, b"", 25.0),  # an epoch time, not seconds
        ({"RateLimit-Reset": "soon"}, b'{"reset": 9}', 9.0),
        ({}, b'{"reset": "8"}', 8.0),
        ({}, b'{"reset": true}', UNSPECIFIED_RESET),
        ({}, b'{"reset": "nan"}', UNSPECIFIED_RESET),
        ({}, b"[1]", UNSPECIFIED_RESET),
        ({}, b"not json", UNSPECIFIED_RESET),
    ],
)
def test_rate_limit_wait(headers: dict[str, str], body: bytes, expected: float) -> None:
    assert rate_limit_wait(CIMultiDict(headers), body, now=NOW) == expected


def test_retry_delay_decisions() -> None:
    policy = RequestPolicy(max_retries=2, max_wait=60.0)

    def delay(status: int, *, idempotent: bool = True, attempt: int = 1) -> float | None:
        return retry_delay(
            policy,
            request="GET /x",
            status=status,
            idempotent=idempotent,
            attempt=attempt,
            headers={"RateLimit-Reset": "60"},
            body=b"",
            now=NOW,
        )

    assert delay(500) == 1.0
    assert delay(408, attempt=2) == 2.0
    assert delay(503, attempt=3) is None  # out of retries
    assert delay(500, idempotent=False) is None
    assert delay(404) is None
    assert delay(429, idempotent=False) == 60.0  # exactly max_wait still waits
    with pytest.raises(TransientError, match="retry in 60 s"):
        delay(429, attempt=3)


def test_error_message() -> None:
    assert error_message(b'{"message": "Nope"}') == "Nope"
    assert error_message(b'{"message": ""}') == '{"message": ""}'
    assert error_message(b"\xff" + b"x" * 500) == "\ufffd" + "x" * 199
