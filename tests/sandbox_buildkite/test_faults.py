"""Injected faults and Buildkite's rate limits: 429 without Retry-After, latency, 5xx."""

from __future__ import annotations

from sandbox.buildkite_faults import RATE_LIMIT_MESSAGE
from sandbox.buildkite_server import BuildkiteSandbox

from ..sandbox.helpers import FakeClock
from .helpers import PIPELINE, SHA_A, BuildkiteApi, api_path, audit_job

BUILDS = api_path("/builds")


async def test_planned_rate_limit(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.faults.rate_limit_next(1)
    answer = await api("GET", BUILDS)
    assert answer.status == 429
    assert "Retry-After" not in answer.headers
    assert answer.headers["RateLimit-Remaining"] == "0"
    assert answer.headers["RateLimit-Reset"] == "50"  # the clock is 10.25 s into the minute
    assert answer.body == {"message": RATE_LIMIT_MESSAGE, "reset": 50}
    assert (await api("GET", BUILDS)).status == 200


async def test_random_rate_limits_reset_when_they_were_told(
    bk: BuildkiteSandbox, api: BuildkiteApi
) -> None:
    bk.faults.randomly(seed=1, limit_rate=1.0)
    assert (await api("GET", BUILDS)).body["reset"] == 50  # the window's end
    bk.faults.randomly(seed=1, limit_rate=1.0, limit_wait=0)
    answer = await api("GET", BUILDS)
    assert (answer.status, answer.headers["RateLimit-Reset"], answer.body["reset"]) == (429, "0", 0)


async def test_per_token_budget(bk: BuildkiteSandbox, api: BuildkiteApi, clock: FakeClock) -> None:
    bk.set_rate_limits(organization=10, per_token=2)
    bk.add_api_token("second-user")
    first = await api("GET", BUILDS)
    assert first.headers["RateLimit-User-Remaining"] == "1"
    assert first.headers["RateLimit-User-Limit"] == "2"
    assert first.headers["RateLimit-Remaining"] == "9"
    assert first.headers["RateLimit-Limit"] == "10"
    assert (await api("GET", BUILDS)).status == 200
    refused = await api("GET", BUILDS)
    assert refused.status == 429
    assert refused.headers["RateLimit-User-Remaining"] == "0"
    assert refused.headers["RateLimit-User-Reset"] == "50"
    assert refused.headers["RateLimit-Remaining"] == "8"  # a refused request is not counted
    assert refused.body["reset"] == 50
    assert (await api("GET", BUILDS, token="second-user")).status == 200  # its own budget
    clock.now += 50  # the next window
    again = await api("GET", BUILDS)
    assert again.status == 200
    assert again.headers["RateLimit-User-Remaining"] == "1"
    assert again.headers["RateLimit-Reset"] == "60"


async def test_organization_budget_is_shared(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.set_rate_limits(organization=2, per_token=None)
    bk.add_api_token("second-user")
    assert (await api("GET", BUILDS)).status == 200
    assert (await api("GET", BUILDS, token="second-user")).status == 200
    refused = await api("GET", BUILDS, token="second-user")
    assert refused.status == 429
    assert "RateLimit-User-Remaining" not in refused.headers
    assert refused.headers["RateLimit-Remaining"] == "0"


async def test_no_budget_means_no_headers(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    answer = await api("GET", BUILDS)
    assert "RateLimit-Remaining" not in answer.headers


async def test_fail_next_by_path(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    bk.faults.fail_next(2, status=503, path_contains="/log")
    assert (await api("GET", BUILDS)).status == 200
    job = bk.build(PIPELINE, 1)["jobs"][0]["id"]
    log = api_path(f"/builds/1/jobs/{job}/log")
    failed = await api("GET", log)
    assert failed.status == 503
    assert failed.body == {"message": "Service Unavailable"}
    assert (await api("GET", log)).status == 503
    assert (await api("GET", log)).status == 200
    bk.faults.fail_next(1)
    assert (await api("GET", BUILDS)).status == 502
    assert [r.status for r in bk.requests] == [200, 503, 503, 200, 502]
    assert bk.requests[1].route == "jobs.log"


async def test_latency_is_added(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.faults.latency = 0.02
    assert (await api("GET", BUILDS)).status == 200
    last = bk.requests[-1]
    assert last.finished - last.started >= 0.02
    bk.faults.clear()
    assert bk.faults.latency == 0.0


async def test_requests_are_recorded(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    await api("GET", BUILDS, params=[("state[]", "failed"), ("state[]", "passed")])
    await api("POST", api_path("/builds/1/annotations"), {"body": "hi"})
    listing, annotation = bk.requests
    assert listing.route == "builds.list"
    assert listing.query == {"state[]": ["failed", "passed"]}
    assert annotation.method == "POST"
    assert annotation.body == {"body": "hi"}
    assert annotation.status == 201
