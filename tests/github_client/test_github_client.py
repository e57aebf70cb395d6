from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import gidgethub
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.core.errors import TransientError
from bot.github.client import GitHubApp

from .github_fakes import Answer, FakeClock, FakeGitHub, MakeApp, RecordingSleep, answers

REPO = "/repos/vllm-project/vllm"
OK = Answer(200, {"full_name": "vllm-project/vllm"})


def serve(fake: FakeGitHub, method: str, path: str, *scripted: Answer) -> None:
    fake.route(method, path, answers(*scripted))


# --- installation tokens through the real endpoint -------------------------------


async def test_requests_carry_the_cached_installation_token(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    serve(fake_github, "GET", REPO, OK)
    client = await github_app.installation_client(11)
    assert await client.getitem(REPO) == OK.json
    assert await client.getitem(REPO) == OK.json
    assert fake_github.token_posts(11) == 1
    used = {r.headers["authorization"] for r in fake_github.seen("GET", REPO)}
    assert used == {"token ghs_11_1"}


async def test_installation_token_is_the_cached_token(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    assert await github_app.installation_token(11) == "ghs_11_1"
    assert await github_app.installation_token(11) == "ghs_11_1"
    (post,) = fake_github.seen("POST", "/app/installations/11/access_tokens")
    assert post.headers["authorization"].startswith("bearer ")


async def test_token_refreshed_near_expiry(
    github_app: GitHubApp, fake_github: FakeGitHub, clock: FakeClock
) -> None:
    serve(fake_github, "GET", REPO, OK)
    client = await github_app.installation_client(11)
    await client.getitem(REPO)
    clock.advance(56 * 60)  # four minutes left: inside the refresh margin
    await client.getitem(REPO)
    assert fake_github.token_posts(11) == 2
    used = [r.headers["authorization"] for r in fake_github.seen("GET", REPO)]
    assert used == ["token ghs_11_1", "token ghs_11_2"]


async def test_concurrent_requests_trigger_one_token_request(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    serve(fake_github, "GET", REPO, OK)
    client = await github_app.installation_client(11)
    results = await asyncio.gather(*(client.getitem(REPO) for _ in range(20)))
    assert results == [OK.json] * 20
    assert fake_github.token_posts(11) == 1


async def test_failed_token_request_is_not_cached(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    serve(fake_github, "GET", REPO, OK)
    fake_github.token_failures = 1
    client = await github_app.installation_client(11)
    with pytest.raises(gidgethub.GitHubBroken):
        await client.getitem(REPO)
    assert await client.getitem(REPO) == OK.json
    # The token POST is not retried on a 5xx (it is a POST), the next call retries.
    assert fake_github.token_posts(11) == 2
    assert sleeps.calls == []


async def test_rejected_token_is_dropped_so_the_next_request_gets_a_new_one(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    serve(fake_github, "GET", REPO, OK)
    client = await github_app.installation_client(11)
    await client.getitem(REPO)
    fake_github.valid_tokens.clear()  # e.g. the App was reinstalled
    with pytest.raises(gidgethub.BadRequest) as raised:
        await client.getitem(REPO)
    assert raised.value.status_code == 401
    assert await client.getitem(REPO) == OK.json
    assert fake_github.token_posts(11) == 2


async def test_token_is_not_sent_to_another_host(
    github_app: GitHubApp,
    fake_github: FakeGitHub,
    aiohttp_server: Callable[[web.Application], Awaitable[TestServer]],
) -> None:
    other = FakeGitHub(fake_github.clock, fake_github.public_key)
    other.route("GET", "/elsewhere", answers(OK))
    other_server = await aiohttp_server(other.app)
    client = await github_app.installation_client(11)
    with pytest.raises(gidgethub.BadRequest):  # the other host wants a token it never gets
        await client.getitem(str(other_server.make_url("/elsewhere")))
    assert "authorization" not in other.requests[0].headers
    assert fake_github.token_posts(11) == 0


async def test_explicit_jwt_is_not_replaced_by_the_installation_token(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    fake_github.installations["vllm-project/vllm"] = 11
    client = await github_app.installation_client(11)
    data = await client.getitem(REPO + "/installation", jwt=github_app.app_jwt())
    assert data == {"id": 11}
    assert fake_github.token_posts(11) == 0


# --- clients per installation and per repository ---------------------------------


async def test_same_client_object_per_installation(github_app: GitHubApp) -> None:
    first = await github_app.installation_client(11)
    assert await github_app.installation_client(11) is first
    other = await github_app.installation_client(12)
    assert other is not first
    assert (first.installation_id, other.installation_id) == (11, 12)


async def test_repo_client_looks_the_installation_up_once(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    fake_github.installations["vllm-project/vllm"] = 11
    client = await github_app.repo_client("vllm-project/vllm")
    assert client is await github_app.repo_client("vllm-project/vllm")
    assert client is await github_app.installation_client(11)
    assert len(fake_github.seen("GET", REPO + "/installation")) == 1


async def test_repo_client_for_a_repo_without_the_app_fails(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    with pytest.raises(gidgethub.BadRequest) as raised:
        await github_app.repo_client("someone/else")
    assert raised.value.status_code == 404


@pytest.mark.parametrize("name", ["vllm", "vllm-project/", "/vllm", "a/b/c"])
async def test_repo_client_rejects_names_that_are_not_owner_slash_repo(
    github_app: GitHubApp, name: str
) -> None:
    with pytest.raises(ValueError, match="owner/name"):
        await github_app.repo_client(name)


async def test_forget_installation_drops_client_token_and_repo_mapping(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    fake_github.installations["vllm-project/vllm"] = 11
    client = await github_app.repo_client("vllm-project/vllm")
    await github_app.installation_token(11)
    github_app.forget_installation(11)
    assert await github_app.repo_client("vllm-project/vllm") is not client
    assert len(fake_github.seen("GET", REPO + "/installation")) == 2
    await github_app.installation_token(11)
    assert fake_github.token_posts(11) == 2


async def test_app_jwt_is_reused_for_a_minute_then_reissued(
    github_app: GitHubApp, clock: FakeClock
) -> None:
    first = github_app.app_jwt()
    clock.advance(59)
    assert github_app.app_jwt() == first
    clock.advance(1)
    assert github_app.app_jwt() != first


# --- conditional requests ------------------------------------------------------


async def test_second_get_is_conditional_and_a_304_returns_the_cached_data(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    async def etagged(request: web.Request) -> web.StreamResponse:
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304)
        return web.json_response({"sha": "abc"}, headers={"ETag": '"v1"'})

    fake_github.route("GET", REPO, etagged)
    client = await github_app.installation_client(11)
    assert await client.getitem(REPO) == {"sha": "abc"}
    assert await client.getitem(REPO) == {"sha": "abc"}
    first, second = fake_github.seen("GET", REPO)
    assert "if-none-match" not in first.headers
    assert second.headers["if-none-match"] == '"v1"'


async def test_etag_cache_is_per_installation(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    serve(fake_github, "GET", REPO, Answer(200, {"sha": "abc"}, {"ETag": '"v1"'}))
    await (await github_app.installation_client(11)).getitem(REPO)
    await (await github_app.installation_client(12)).getitem(REPO)
    assert ["if-none-match" in r.headers for r in fake_github.seen("GET", REPO)] == [False, False]


async def test_etag_cache_size_is_configurable(make_app: MakeApp, fake_github: FakeGitHub) -> None:
    for path in ("/a", "/b"):
        serve(fake_github, "GET", path, Answer(200, {"path": path}, {"ETag": '"v1"'}))
    client = await make_app(etag_cache_size=1).installation_client(11)
    for path in ("/a", "/b", "/a"):
        await client.getitem(path)
    # "/a" was evicted by "/b", so asking for it again is not conditional.
    assert ["if-none-match" in r.headers for r in fake_github.seen("GET", "/a")] == [False, False]


# --- rate limits -----------------------------------------------------------------


async def test_secondary_rate_limit_sleeps_retry_after_then_succeeds(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    limited = Answer(
        403, {"message": "You have exceeded a secondary rate limit"}, {"Retry-After": "7"}
    )
    serve(fake_github, "GET", REPO, limited, OK)
    client = await github_app.installation_client(11)
    assert await client.getitem(REPO) == OK.json
    assert sleeps.calls == [7.0]


async def test_secondary_rate_limit_on_a_post_is_retried_too(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    # A rate-limited write was refused, not performed, so retrying cannot duplicate it.
    serve(fake_github, "POST", REPO + "/issues", Answer(429, None, {"Retry-After": "3"}), OK)
    client = await github_app.installation_client(11)
    assert await client.post(REPO + "/issues", data={"title": "x"}) == OK.json
    assert sleeps.calls == [3.0]


async def test_primary_rate_limit_resetting_soon_sleeps_until_reset(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep, clock: FakeClock
) -> None:
    reset = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0"}
    reset["X-RateLimit-Reset"] = str(int(clock() + 30))
    serve(fake_github, "GET", REPO, Answer(403, {"message": "API rate limit exceeded"}, reset), OK)
    client = await github_app.installation_client(11)
    assert await client.getitem(REPO) == OK.json
    assert sleeps.calls == [31.0]


async def test_primary_rate_limit_resetting_later_is_handed_back_to_the_inbox(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep, clock: FakeClock
) -> None:
    reset = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0"}
    reset["X-RateLimit-Reset"] = str(int(clock() + 1800))
    serve(fake_github, "GET", REPO, Answer(403, {"message": "API rate limit exceeded"}, reset))
    client = await github_app.installation_client(11)
    with pytest.raises(TransientError) as raised:
        await client.getitem(REPO)
    assert raised.value.retry_after == 1800
    assert sleeps.calls == []
    assert len(fake_github.seen("GET", REPO)) == 1


async def test_rate_limit_without_hints_backs_off_from_a_minute_within_max_wait(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    serve(fake_github, "GET", REPO, Answer(429, {"message": "Too many requests"}))
    client = await github_app.installation_client(11)
    with pytest.raises(TransientError) as raised:
        await client.getitem(REPO)
    assert sleeps.calls == [60.0]  # the next wait, 120 s, exceeds max_wait (90 s)
    assert raised.value.retry_after == 120.0


async def test_rate_limit_retries_are_bounded(
    make_app: MakeApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    serve(fake_github, "GET", REPO, Answer(429, None, {"Retry-After": "5"}))
    client = await make_app(max_retries=3).installation_client(11)
    with pytest.raises(TransientError) as raised:
        await client.getitem(REPO)
    assert sleeps.calls == [5.0, 5.0, 5.0]
    assert len(fake_github.seen("GET", REPO)) == 4
    assert raised.value.retry_after == 5.0


async def test_long_retry_after_is_handed_back_to_the_inbox(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    serve(fake_github, "GET", REPO, Answer(403, None, {"Retry-After": "600"}))
    client = await github_app.installation_client(11)
    with pytest.raises(TransientError) as raised:
        await client.getitem(REPO)
    assert raised.value.retry_after == 600.0
    assert sleeps.calls == []


async def test_forbidden_without_rate_limit_signs_is_not_retried(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    serve(
        fake_github, "GET", REPO, Answer(403, {"message": "Resource not accessible by integration"})
    )
    client = await github_app.installation_client(11)
    with pytest.raises(gidgethub.BadRequest) as raised:
        await client.getitem(REPO)
    assert raised.value.status_code == 403
    assert sleeps.calls == []


# --- server errors and timeouts -----------------------------------------------------


async def test_server_error_on_get_is_retried_with_short_backoff(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    serve(fake_github, "GET", REPO, Answer(502), Answer(503), OK)
    client = await github_app.installation_client(11)
    assert await client.getitem(REPO) == OK.json
    assert sleeps.calls == [1.0, 2.0]


async def test_server_error_backoff_is_configurable(
    make_app: MakeApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    serve(fake_github, "GET", REPO, Answer(502), Answer(503), OK)
    client = await make_app(retry_backoff=0.1).installation_client(11)
    assert await client.getitem(REPO) == OK.json
    assert sleeps.calls == [0.1, 0.2]


async def test_server_error_retries_are_bounded(
    make_app: MakeApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    labels = REPO + "/issues/7/labels"
    serve(fake_github, "PUT", labels, Answer(500))
    client = await make_app(max_retries=2).installation_client(11)
    with pytest.raises(gidgethub.GitHubBroken):
        await client.put(labels, data={"labels": ["ready"]})
    assert len(fake_github.seen("PUT", labels)) == 3
    assert sleeps.calls == [1.0, 2.0]


async def test_server_error_on_a_content_addressed_write_is_retried(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep
) -> None:
    blobs = REPO + "/git/blobs"
    serve(fake_github, "POST", blobs, Answer(502), OK)
    client = await github_app.installation_client(11)
    assert await client.post(blobs, data={"content": "eA==", "encoding": "base64"}) == OK.json
    assert len(fake_github.seen("POST", blobs)) == 2
    assert sleeps.calls == [1.0]


@pytest.mark.parametrize("method", ["POST", "PUT"])
async def test_server_error_on_a_write_that_may_have_happened_is_not_retried(
    github_app: GitHubApp, fake_github: FakeGitHub, sleeps: RecordingSleep, method: str
) -> None:
    url = REPO + ("/pulls" if method == "POST" else "/pulls/7/merge")
    serve(fake_github, method, url, Answer(502), OK)
    client = await github_app.installation_client(11)
    send = client.post if method == "POST" else client.put
    with pytest.raises(gidgethub.GitHubBroken):
        await send(url, data={"title": "bump"})
    assert len(fake_github.seen(method, url)) == 1
    assert sleeps.calls == []


async def test_request_timeout_is_transient(make_app: MakeApp, fake_github: FakeGitHub) -> None:
    fake_github.hang("GET", REPO)
    client = await make_app(timeout=0.05).installation_client(11)
    with pytest.raises(TransientError, match="did not answer GET"):
        await client.getitem(REPO)


async def test_graphql_goes_to_the_configured_host_with_the_token(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    serve(fake_github, "POST", "/graphql", Answer(200, {"data": {"viewer": {"login": "bot"}}}))
    client = await github_app.installation_client(11)
    assert await client.graphql("query { viewer { login } }") == {"viewer": {"login": "bot"}}
    (request,) = fake_github.seen("POST", "/graphql")
    assert request.headers["authorization"] == "token ghs_11_1"
