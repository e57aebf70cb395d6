"""Injected faults: 5xx, primary and secondary rate limits, latency."""

from __future__ import annotations

import gidgethub
import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_faults import PRIMARY_LIMIT_MESSAGE, SECONDARY_LIMIT_MESSAGE
from sandbox.github_server import GitHubSandbox

from .helpers import REPO, RawApi


async def test_fail_next_then_recover(sandbox: GitHubSandbox, raw: RawApi) -> None:
    sandbox.faults.fail_next(2, status=503)
    assert (await raw("GET", f"/repos/{REPO}")).status == 503
    assert (await raw("GET", f"/repos/{REPO}")).status == 503
    assert (await raw("GET", f"/repos/{REPO}")).status == 200
    assert [r.status for r in sandbox.requests[-3:]] == [503, 503, 200]


async def test_an_outage_lasts_until_cleared(sandbox: GitHubSandbox, raw: RawApi) -> None:
    sandbox.faults.outage(503)
    for _ in range(3):
        assert (await raw("GET", f"/repos/{REPO}")).status == 503
    sandbox.faults.clear()
    assert (await raw("GET", f"/repos/{REPO}")).status == 200


async def test_fault_targets_one_operation(sandbox: GitHubSandbox, raw: RawApi) -> None:
    sandbox.faults.fail_next(1, operation="pulls/list")
    assert (await raw("GET", f"/repos/{REPO}")).status == 200
    assert (await raw("GET", f"/repos/{REPO}/pulls")).status == 502
    assert (await raw("GET", f"/repos/{REPO}/pulls")).status == 200


async def test_primary_rate_limit(sandbox: GitHubSandbox, raw: RawApi, gh: GitHubAPI) -> None:
    sandbox.faults.rate_limit_next(1, kind="primary")
    answer = await raw("GET", f"/repos/{REPO}")
    assert answer.status == 403
    assert answer.headers["x-ratelimit-remaining"] == "0"
    assert int(answer.headers["x-ratelimit-reset"]) > 0
    assert answer.body["message"] == PRIMARY_LIMIT_MESSAGE
    sandbox.faults.rate_limit_next(1, kind="primary")
    with pytest.raises(gidgethub.RateLimitExceeded):
        await gh.getitem(f"/repos/{REPO}")
    assert (await raw("GET", f"/repos/{REPO}")).status == 200


async def test_secondary_rate_limit(sandbox: GitHubSandbox, raw: RawApi) -> None:
    sandbox.faults.rate_limit_next(1, retry_after=7)
    answer = await raw("POST", f"/repos/{REPO}/issues", {"title": "t"})
    assert answer.status == 403
    assert answer.headers["retry-after"] == "7"
    assert answer.body["message"] == SECONDARY_LIMIT_MESSAGE
    assert int(answer.headers["x-ratelimit-remaining"]) > 0
    assert sandbox.repo(REPO).issues == {}  # the refused write did not happen


async def test_random_rate_limits_ask_for_the_wait_they_were_given(
    sandbox: GitHubSandbox, raw: RawApi
) -> None:
    sandbox.faults.randomly(seed=1, limit_rate=1.0)
    assert (await raw("GET", f"/repos/{REPO}")).headers["retry-after"] == "1"
    sandbox.faults.randomly(seed=1, limit_rate=1.0, limit_wait=0)
    answer = await raw("GET", f"/repos/{REPO}")
    assert (answer.status, answer.headers["retry-after"]) == (403, "0")


async def test_latency_is_added(sandbox: GitHubSandbox, raw: RawApi) -> None:
    sandbox.faults.latency = 0.02
    assert (await raw("GET", f"/repos/{REPO}")).status == 200
    last = sandbox.requests[-1]
    assert last.finished - last.started >= 0.02


async def test_exhausted_bucket_is_refused(sandbox: GitHubSandbox, raw: RawApi) -> None:
    bucket = sandbox.auth.bucket(raw.token)
    bucket.used = bucket.limit
    answer = await raw("GET", f"/repos/{REPO}")
    assert answer.status == 403
    assert answer.headers["x-ratelimit-remaining"] == "0"
