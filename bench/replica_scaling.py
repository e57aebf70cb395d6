"""Replicas on PostgreSQL: how fast 1, 2 and 3 of them drain deliveries already queued.

The GitHub stand-in answers every call ``--latency`` late (50 ms: a real API's round
trip), ``--repositories`` downstream repositories each pin one upstream commit (every pin
current), and ``--deliveries`` deliveries wait in one PostgreSQL database (a server
started here, with fsync) before any replica starts: each the sync of one repository's
pin, which reads the default branch, the bump branch's PRs and upstream's head and
writes nothing (so GitHub's limits on writes do not pace the run). Deliveries of one
repository share a subject and run one at a time, whichever replica claims them; the
repositories are the parallelism. Then N ``followup-bot serve`` replicas (each with the
service's default workers) start on that database, and the clock runs from their start
until the last delivery is done. Per N: seconds, deliveries per second, the scaling
factor against one replica, the GitHub requests made, and that every delivery ran once
and ended done.

Usage: python bench/replica_scaling.py [--replicas 1 2 3] [--deliveries 2000]
       [--repositories 24] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from bot.context.followups import sync_delivery
from bot.store.access import Access
from bot.store.postgres import PostgresStore
from bot.store.protocol import Store
from sandbox.harness import Harness, harness
from sandbox.ports import free_port
from sandbox.postgres_server import create_database, start_server
from sandbox.served import serve, serve_env
from sandbox.vllm_shapes import CONFIG, PIN_FILE, PIN_TEMPLATE, UPSTREAM

DRAIN_TIMEOUT = 1800.0
PIN = "flash-attention"


def downstreams(count: int) -> tuple[str, ...]:
    return tuple(f"vllm-project/vllm-{n:02d}" for n in range(count))


def seed(env: Harness, repositories: tuple[str, ...]) -> None:
    """One upstream, and each downstream pinning its head (nothing to bump)."""
    sandbox = env.sandbox
    sandbox.create_repo(UPSTREAM, files={"README.md": "x\n"}, installation_id=1)
    pinned = sandbox.head(UPSTREAM)
    files = {PIN_FILE: PIN_TEMPLATE.format(sha=pinned), ".github/followup-bot.yml": CONFIG}
    for name in repositories:
        sandbox.create_repo(name, files=files, installation_id=2)


async def queue(url: str, repositories: tuple[str, ...], count: int) -> None:
    """``count`` pin syncs, round the repositories, queued before any replica runs (the
    store that writes them creates the schema)."""
    store = PostgresStore(url)
    await store.open()
    try:
        now = time.time()
        for n in range(count):
            repo = repositories[n % len(repositories)]
            await store.enqueue(sync_delivery(f"bench-{n}", repo, {"pin": PIN}, now))
    finally:
        await store.close()


def replica_env(env: Harness, workdir: Path, url: str) -> dict[str, str]:
    return serve_env(env, workdir, free_port()) | {
        "FOLLOWUP_BOT_DATABASE": url,
        "FOLLOWUP_BOT_LOG_LEVEL": "WARNING",
    }


async def drained(store: Store) -> None:
    """Return once no delivery is queued or running (the replicas are other processes)."""
    async with asyncio.timeout(DRAIN_TIMEOUT):
        while True:
            if not await store.count_unfinished():
                return
            await asyncio.sleep(0.05)


@dataclass(frozen=True)
class Run:
    replicas: int
    seconds: float
    requests: int
    done: int
    attempts: int  # summed over the deliveries: each ran once when this equals ``done``


async def one_run(workdir: Path, server_url: str, replicas: int, args: argparse.Namespace) -> Run:
    repositories = downstreams(args.repositories)
    async with harness(workdir, repositories=repositories, start=False) as env:
        seed(env, repositories)
        url = await create_database(server_url, "scaling")
        await queue(url, repositories, args.deliveries)
        store = PostgresStore(url, access=Access.READ)  # not a replica: it only counts
        await store.open()
        try:
            env.sandbox.faults.latency = args.latency
            env.sandbox.reset_log()
            async with AsyncExitStack() as stack:
                start = time.perf_counter()
                await asyncio.gather(
                    *(
                        stack.enter_async_context(serve(replica_env(env, workdir, url)))
                        for _ in range(replicas)
                    )
                )
                await drained(store)
                seconds = time.perf_counter() - start
        finally:
            await store.close()
        done, attempts = await outcomes(url)
        requests = sum(
            1
            for r in env.sandbox.requests
            if r.operation_id != "apps/create-installation-access-token"
        )
        return Run(replicas, seconds, requests, done, attempts)


async def outcomes(url: str) -> tuple[int, int]:
    """Deliveries done, and attempts summed over all deliveries."""
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            "SELECT COUNT(*) FILTER (WHERE status = 'done') AS done,"
            " COALESCE(SUM(attempts), 0) AS attempts FROM deliveries"
        )
    finally:
        await conn.close()
    return int(row["done"]), int(row["attempts"])


async def main(args: argparse.Namespace) -> None:
    server = start_server(durable=True)
    try:
        runs = []
        for replicas in args.replicas:
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(await one_run(Path(tmp), server.url, replicas, args))
    finally:
        server.stop()
    print(
        f"{args.deliveries} queued pin syncs over {args.repositories} repositories, GitHub"
        f" stand-in {args.latency * 1000:.0f} ms per call, PostgreSQL with fsync"
    )
    print("| replicas | drained in | deliveries/s | speed-up | GitHub requests | done | attempts |")
    print("|---|---|---|---|---|---|---|")
    for run in runs:
        rate = args.deliveries / run.seconds
        speedup = runs[0].seconds / run.seconds  # against the first row (one replica)
        print(
            f"| {run.replicas} | {run.seconds:.1f} s | {rate:.1f} | {speedup:.2f}"
            f" | {run.requests} | {run.done} | {run.attempts} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--repositories", type=int, default=24)
    parser.add_argument("--latency", type=float, default=0.05)
    asyncio.run(main(parser.parse_args()))
