"""Chaos: replicas killed and restarted under a stream of mixed deliveries and faulty services.

Three ``followup-bot serve`` replicas on one PostgreSQL database (and, the same run, one
replica on SQLite) behind a round-robin balancer take 500 deliveries: upstream merges
(bump PRs), command comments, `@bot retry-flaky`, approvals, finished Buildkite builds
(landing) and GitHub redeliveries of earlier deliveries. Both stand-ins answer 8 % of
requests with a server error and 2 % with a rate limit; now and then a replica is killed
with SIGKILL and started again. Afterwards every delivery a replica accepted (202) is
done or failed with a reason, and the stand-ins hold no duplicate PR, push, comment,
retry or merge.

A shorter run adds an outage: two replicas on a PostgreSQL server of the test's own,
ghost writes besides the 5xx, and the server stopped in the middle and started again
while deliveries keep coming (refused with 503, redelivered afterwards). No delivery
fails for the outage, and the same checks hold.
"""

from __future__ import annotations

import asyncio
import collections
import random
import re
import sqlite3
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bot.comments.replies import MARKER_REPLY
from sandbox.harness import BUILDKITE_TOKEN, Harness
from sandbox.ports import free_port
from sandbox.postgres_server import PostgresServer, create_database, start_server
from sandbox.served import Served, serve, serve_env
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM
from sandbox.webhook_balancer import WebhookBalancer
from tests.e2e.test_bump_faults import branch_pushes
from tests.e2e.test_bump_flow import bump_pulls, merge_upstream
from tests.e2e.test_landing import (
    LANDING,
    LOST_AGENT,
    MAINTAINER,
    PASSING,
    finished_build,
    merges,
    seed_landing,
)
from tests.e2e.test_mixed_faults import contributor_pr, retried_jobs

DELIVERIES = 500
# A rate limit asks for no wait and a failed request is repeated after 50 ms: the waits
# themselves have tests of their own (tests/github_client, tests/buildkite_client), and
# here, at the real 1 s (GitHub) and up to 60 s (Buildkite), they made the run minutes of
# sleep. Faults, kills and the checks afterwards are the same.
FAULTS: dict[str, Any] = {"error_rate": 0.08, "limit_rate": 0.02, "limit_wait": 0}
KILL_EVERY = 45  # deliveries between two kills, on average
QUIET_TIMEOUT = 240.0
REPLY = re.compile(re.escape(MARKER_REPLY).replace(r"\{comment\}", r"(\d+)"))
ACTIONS = ("merge", "help", "help", "help", "retry", "approve", "build", "redeliver")
# The outage run: fewer deliveries, ghost writes too, and this many actions (each a
# delivery or so, all refused) while the database is down.
OUTAGE_DELIVERIES = 160
OUTAGE_FAULTS: dict[str, Any] = FAULTS | {"ghost_rate": 0.03}
OUTAGE_ACTIONS = 8
# Words of a failure that would be the outage's, had it failed a delivery.
OUTAGE_WORDS = (
    "ConnectionDoesNotExistError",
    "CannotConnectNowError",
    "AdminShutdownError",
    "ConnectionRefusedError",
    "InterfaceError",
    "InternalClientError",
)


class Replica:
    """One ``serve`` process on its own port, started and killed by the test."""

    def __init__(self, variables: dict[str, str]) -> None:
        self.variables = variables
        self.url = f"http://127.0.0.1:{variables['FOLLOWUP_BOT_PORT']}"
        self._stack: AsyncExitStack | None = None
        self._process: Served | None = None

    async def start(self) -> None:
        self._stack = AsyncExitStack()
        self._process = await self._stack.enter_async_context(serve(self.variables))

    async def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup, whatever it was doing."""
        assert self._process is not None
        assert self._stack is not None
        self._process.kill()
        await self._process.wait()
        await self._stack.aclose()
        self._process = self._stack = None

    async def stop(self) -> None:
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = self._process = None


@pytest.fixture
async def balancer() -> AsyncIterator[WebhookBalancer]:
    front = WebhookBalancer()
    await front.start()
    yield front
    await front.stop()


def replica_variables(env: Harness, workdir: Path, database: str) -> dict[str, str]:
    variables = serve_env(env, workdir, free_port())
    variables.update(
        FOLLOWUP_BOT_DATABASE=database,
        FOLLOWUP_BOT_RETRY_BACKOFF="0.2",  # the faults are dense; backoff in seconds, not minutes
        FOLLOWUP_BOT_HTTP_RETRY_BACKOFF="0.05",
        # GitHub's 80 writes a minute would make the run last minutes of waiting; the
        # pacing has tests of its own (tests/core/test_pacing.py, bench/write_pacing.py).
        FOLLOWUP_BOT_GITHUB_WRITES_PER_MINUTE="100000",
        FOLLOWUP_BOT_GITHUB_WRITES_PER_HOUR="10000000",
        FOLLOWUP_BOT_BUILDKITE_API_TOKEN=BUILDKITE_TOKEN,
        FOLLOWUP_BOT_BUILDKITE_API_URL=env.ci.base_url,
        FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET=env.settings.webhook_secret,
    )
    return variables


async def inbox_rows(database: str) -> list[tuple[str, str, str | None]]:
    """(delivery id, status, last error) of every stored delivery."""
    query = "SELECT delivery_id, status, last_error FROM deliveries"
    if database.startswith("postgresql://"):
        conn = await asyncpg.connect(database)
        try:
            return [(r[0], r[1], r[2]) for r in await conn.fetch(query)]
        finally:
            await conn.close()

    def read() -> list[tuple[str, str, str | None]]:
        with sqlite3.connect(database, timeout=10.0) as conn:
            return [(r[0], r[1], r[2]) for r in conn.execute(query)]

    return await asyncio.to_thread(read)


class Chaos:
    """The run: the replicas, the seeded choices, and what was sent."""

    def __init__(self, env: Harness, replicas: list[Replica], seed: int) -> None:
        self.env = env
        self.replicas = replicas
        self.rng = random.Random(seed)
        self.merged = 0
        self.kills = 0
        self.contributor = 0
        self.next_kill = KILL_EVERY
        self.outages = 0
        self.refused_in_outage = 0

    def sent(self) -> int:
        return len(self.env.sandbox.deliveries) + len(self.env.ci.deliveries)

    def bump_pull(self) -> dict[str, Any] | None:
        pulls = bump_pulls(self.env)
        return pulls[0] if pulls else None

    async def act(self) -> None:
        action = self.rng.choice(ACTIONS)
        pull = self.bump_pull()
        if pull is None or action == "merge":
            self.merged += 1
            await merge_upstream(self.env, self.merged)
        elif action == "help":
            self.env.sandbox.comment_as(DOWNSTREAM, int(pull["number"]), MAINTAINER, "@bot help")
        elif action == "retry":
            command = "@bot retry-flaky"
            self.env.sandbox.comment_as(DOWNSTREAM, self.contributor, MAINTAINER, command)
        elif action == "approve":
            self.env.sandbox.submit_review(DOWNSTREAM, int(pull["number"]), MAINTAINER)
        elif action == "build":
            await finished_build(self.env, pull, self.rng.choice((PASSING, LOST_AGENT)))
        else:
            earlier = self.rng.choice(self.env.sandbox.deliveries)
            await self.env.sandbox.deliver(
                earlier.event, earlier.payload, delivery_id=earlier.delivery_id
            )
        await self.env.sandbox.flush()
        await self.env.ci.flush()

    async def maybe_kill(self) -> None:
        """Every KILL_EVERY deliveries or so, a replica dies and a new one starts."""
        if self.sent() < self.next_kill:
            return
        self.next_kill += self.rng.randint(KILL_EVERY // 2, KILL_EVERY * 3 // 2)
        victim = self.rng.choice(self.replicas)
        await victim.kill()
        self.kills += 1
        await victim.start()

    async def outage(self, server: PostgresServer) -> None:
        """The database stops under the replicas, deliveries keep coming, it starts again."""
        await asyncio.to_thread(server.halt)
        first = len(self.env.sandbox.deliveries)
        for _ in range(OUTAGE_ACTIONS):
            await self.act()
        during = self.env.sandbox.deliveries[first:]
        self.refused_in_outage = sum(1 for d in during if d.status == 503)
        await asyncio.to_thread(server.resume)
        self.outages += 1

    async def redeliver_refused(self) -> None:
        """As an operator does with GitHub's "Redeliver": every delivery no replica took."""
        latest = {d.delivery_id: d for d in self.env.sandbox.deliveries}
        for delivery in latest.values():
            if delivery.status != 202:
                await self.env.sandbox.deliver(
                    delivery.event, delivery.payload, delivery_id=delivery.delivery_id
                )
        await self.env.sandbox.flush()

    async def quiet(self, database: str) -> None:
        """Until nothing is queued or running and the stand-ins have stopped moving."""
        async with asyncio.timeout(QUIET_TIMEOUT):
            calm = 0
            while calm < 3:
                seen = self.activity()
                await self.env.sandbox.flush()
                await self.env.ci.flush()
                rows = await inbox_rows(database)
                idle = not [r for r in rows if r[1] in ("queued", "running")]
                calm = calm + 1 if idle and self.activity() == seen else 0
                await asyncio.sleep(0.05)  # polling other processes; not a timing assertion

    def activity(self) -> tuple[int, ...]:
        env = self.env
        return (
            len(env.sandbox.requests),
            len(env.sandbox.deliveries),
            len(env.ci.requests),
            len(env.ci.deliveries),
        )


async def test_three_replicas_on_postgres_killed_under_faults(
    ci_env: Harness, balancer: WebhookBalancer, tmp_path: Path, postgres_url: str
) -> None:
    await run_chaos(ci_env, balancer, tmp_path, postgres_url, replicas=3)


async def test_one_replica_on_sqlite_killed_under_faults(
    ci_env: Harness, balancer: WebhookBalancer, tmp_path: Path
) -> None:
    await run_chaos(ci_env, balancer, tmp_path, str(tmp_path / "chaos.sqlite3"), replicas=1)


async def test_two_replicas_on_postgres_through_an_outage_under_faults(
    ci_env: Harness, balancer: WebhookBalancer, tmp_path: Path
) -> None:
    server = await asyncio.to_thread(start_server)  # this test's own: it is stopped
    try:
        database = await create_database(server.url)
        await run_chaos(
            ci_env, balancer, tmp_path, database, replicas=2, outage_of=server, min_kills=2
        )
    finally:
        await asyncio.to_thread(server.stop)


async def run_chaos(
    env: Harness,
    balancer: WebhookBalancer,
    tmp_path: Path,
    database: str,
    *,
    replicas: int,
    outage_of: PostgresServer | None = None,
    min_kills: int = 3,
) -> None:
    """The run and its checks: nothing lost, nothing written twice; with ``outage_of``,
    a shorter run with ghost writes that stops that server in the middle of it."""
    count = replicas
    deliveries, faults = (
        (DELIVERIES, FAULTS) if outage_of is None else (OUTAGE_DELIVERIES, OUTAGE_FAULTS)
    )
    seed_landing(env, config=CONFIG + LANDING)
    env.ci.set_retry_outcome("gpu-a", state="passed")
    env.sandbox.webhook_url = balancer.url + "/webhooks/github"
    env.ci.webhook_url = balancer.url + "/webhooks/buildkite"
    served: list[Replica] = []
    for n in range(count):
        (tmp_path / f"r{n}").mkdir()
        served.append(Replica(replica_variables(env, tmp_path / f"r{n}", database)))
    balancer.replicas = [r.url for r in served]
    chaos = Chaos(env, served, seed=20 + count)
    try:
        for replica in served:
            await replica.start()
        chaos.contributor = await contributor_pr(env)
        env.sandbox.faults.randomly(seed=31, **faults)
        env.ci.faults.randomly(seed=32, **faults)
        while chaos.sent() < deliveries:
            await chaos.act()
            await chaos.maybe_kill()
            if outage_of is not None and not chaos.outages and chaos.sent() >= deliveries // 2:
                await chaos.outage(outage_of)
        await chaos.redeliver_refused()
        await chaos.quiet(database)
        rows = await inbox_rows(database)
    finally:
        for replica in served:
            await replica.stop()

    # Nothing lost: every delivery a replica accepted is finished, a failure with its reason.
    accepted = {d.delivery_id for d in env.sandbox.deliveries if d.status == 202}
    accepted |= {d.request_id for d in env.ci.deliveries if d.status == 202}
    stored = {delivery_id: (status, error) for delivery_id, status, error in rows}
    assert accepted <= stored.keys()
    assert {status for status, _ in stored.values()} <= {"done", "failed"}
    assert all(error for status, error in stored.values() if status == "failed")
    assert chaos.sent() >= deliveries
    assert chaos.kills >= min_kills
    if outage_of is not None:
        assert chaos.outages == 1
        assert chaos.refused_in_outage > 0  # the outage was one: deliveries met it
        failed_for_it = [e for s, e in stored.values() if s == "failed" and e]
        assert not [e for e in failed_for_it if any(w in e for w in OUTAGE_WORDS)]
    written_once(env, chaos)


def written_once(env: Harness, chaos: Chaos) -> None:
    """Nothing written twice: PRs, pushes, command replies, job retries, merges."""
    open_bumps = [p for p in bump_pulls(env) if p["state"] == "open"]
    assert len(open_bumps) <= 1
    pushes = branch_pushes(env)
    assert all(n == 1 for n in pushes.values()), pushes
    replies = collections.Counter(
        match
        for number in {int(p["number"]) for p in bump_pulls(env)} | {chaos.contributor}
        for comment in env.sandbox.comments(DOWNSTREAM, number)
        for match in REPLY.findall(str(comment["body"]))
    )
    assert all(n == 1 for n in replies.values()), replies
    retried = retried_jobs(env)
    assert len(retried) == len(set(retried))
    ghost_merges = sum(
        1 for f in env.sandbox.faults.injected if f.kind == "ghost" and f.operation == "pulls/merge"
    )
    assert merges(env).count(200) + ghost_merges <= len(bump_pulls(env))
    assert env.sandbox.violations == []
