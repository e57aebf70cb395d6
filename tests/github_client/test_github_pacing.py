"""Through the real client and a scripted GitHub: a burst of writes waits its turn
(GitHub's 80 a minute), none fails, and reads are not held back by it."""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from bot.github.client import (
    DEFAULT_CONCURRENCY,
    WRITES_PER_MINUTE,
    GitHubApp,
    github_pacer,
    graphql_reads_only,
)

from .conftest import START
from .github_fakes import FakeClock, FakeGitHub, MakeApp, RecordingSleep

COMMENTS = "/repos/o/r/issues/1/comments"
REPO = "/repos/o/r"
CAP_WAIT_SECONDS = 30.0


def most_in_any_minute(times: list[float]) -> int:
    ordered = sorted(times)
    return max(
        sum(1 for later in ordered[i:] if later < first + 60.0) for i, first in enumerate(ordered)
    )


async def test_ninety_writes_in_a_burst_take_a_minute_and_none_fails(
    github_app: GitHubApp, fake_github: FakeGitHub, clock: FakeClock, sleeps: RecordingSleep
) -> None:
    arrived: list[float] = []
    # The first answers wait until the cap is full once: how many requests overlap by
    # themselves depends on how the event loop orders them (3.11 and 3.12 differ). The
    # wait is bounded so that a lower cap fails the assertion below instead of hanging.
    cap_reached = asyncio.Event()

    async def comment(request: web.Request) -> web.StreamResponse:
        arrived.append(clock())
        if client.pacer.in_flight == DEFAULT_CONCURRENCY:
            cap_reached.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(cap_reached.wait(), CAP_WAIT_SECONDS)
        return web.json_response({"id": len(arrived)}, status=201)

    fake_github.route("POST", COMMENTS, comment)
    client = await github_app.installation_client(11)
    answers = await asyncio.gather(
        *(client.post(COMMENTS, data={"body": f"comment {n}"}) for n in range(90))
    )
    assert len(answers) == 90
    assert len(fake_github.seen("POST", COMMENTS)) == 90
    assert clock() - START >= 60.0
    assert most_in_any_minute(arrived) <= WRITES_PER_MINUTE
    minute = client.pacer.write_buckets[0]
    assert minute.waits >= 1  # the first beyond the minute's 80 waited for it to pass
    assert sum(sleeps.calls) >= 60.0
    assert client.pacer.most_in_flight == DEFAULT_CONCURRENCY


async def test_reads_go_through_while_writes_wait(
    make_app: MakeApp, fake_github: FakeGitHub, clock: FakeClock
) -> None:
    minute_over = asyncio.Event()

    async def stalled_sleep(seconds: float) -> None:
        await minute_over.wait()  # the writes' minute does not pass until the reads are done
        clock.advance(seconds)

    async def created(request: web.Request) -> web.StreamResponse:
        return web.json_response({"id": 1}, status=201)

    async def repo(request: web.Request) -> web.StreamResponse:
        return web.json_response({"full_name": "o/r"})

    fake_github.route("POST", COMMENTS, created)
    fake_github.route("GET", REPO, repo)
    app = make_app(make_pacer=lambda: github_pacer(10, clock=clock, sleep=stalled_sleep))
    client = await app.installation_client(11)
    writes = [
        asyncio.create_task(client.post(COMMENTS, data={"body": str(n)}))
        for n in range(WRITES_PER_MINUTE + 5)
    ]
    reads = await asyncio.gather(*(client.getitem(REPO) for _ in range(20)))
    assert len(reads) == 20
    assert clock() == START
    assert sum(task.done() for task in writes) <= WRITES_PER_MINUTE
    minute_over.set()
    await asyncio.gather(*writes)
    assert len(fake_github.seen("POST", COMMENTS)) == WRITES_PER_MINUTE + 5


def test_a_graphql_query_is_a_read_and_anything_else_a_write() -> None:
    assert graphql_reads_only("query($b0: String!) { repository { id } }")
    assert graphql_reads_only("# the PRs\n  query Pulls { x }")
    assert graphql_reads_only("{ viewer { login } }")
    assert not graphql_reads_only("mutation { enablePullRequestAutoMerge(input: {}) { x } }")
    assert not graphql_reads_only("queryish { x }")
    assert not graphql_reads_only("fragment F on PullRequest { id }\nquery { x }")
    assert not graphql_reads_only("# only a comment")


async def test_graphql_queries_take_no_write_token_and_mutations_do(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.json_response({"data": {"ok": True}})

    fake_github.route("POST", "/graphql", answer)
    client = await github_app.installation_client(11)
    minute = client.pacer.write_buckets[0]
    before = minute.spent
    await client.graphql("query { ok }")
    assert minute.spent == before  # a query is paced as a read
    await client.graphql("mutation { ok }")
    assert minute.spent == before + 1
