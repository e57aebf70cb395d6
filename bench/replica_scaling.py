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
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from bot.service.followups import sync_delivery
from bot.store.postgres import PostgresStore
from sandbox.harness import Harness, app_key, harness
from sandbox.ports import free_port
from sandbox.postgres_server import create_database, start_server
from sandbox.vllm_shapes import CONFIG, PIN_FILE, PIN_TEMPLATE, UPSTREAM

READY_MARK = b"Running on"
START_TIMEOUT = 60.0
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
    """``count`` pin syncs, round the repositories, queued before any replica runs."""
    store = PostgresStore(url)
    await store.open()
    try:
        now = time.time()
        for n in range(count):
            repo = repositories[n % len(repositories)]
            await store.enqueue(sync_delivery(f"bench-{n}", repo, {"pin": PIN}, now))
    finally:
        await store.close()


def replica_env(env: Harness, key_file: Path, url: str, port: int) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "FOLLOWUP_BOT_WEBHOOK_SECRET": env.settings.webhook_secret,
        "FOLLOWUP_BOT_APP_ID": env.settings.app_id,
        "FOLLOWUP_BOT_PRIVATE_KEY_FILE": str(key_file),
        "FOLLOWUP_BOT_REPOSITORIES": ",".join(env.settings.repositories),
        "FOLLOWUP_BOT_GITHUB_API_URL": env.sandbox.base_url,
        "FOLLOWUP_BOT_DATABASE": url,
        "FOLLOWUP_BOT_PORT": str(port),
        "FOLLOWUP_BOT_RECONCILE_INTERVAL": "0",
        "FOLLOWUP_BOT_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }


@asynccontextmanager
async def replica(env: dict[str, str]) -> AsyncIterator[None]:
    """``followup-bot serve`` as a process of its own, until the context ends."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "serve",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    output = b""
    async with asyncio.timeout(START_TIMEOUT):
        while READY_MARK not in output:
            line = await proc.stdout.readline()
            if not line:
                raise RuntimeError(f"serve exited before it was ready:\n{output.decode()}")
            output += line
    drain = asyncio.create_task(_drain(proc.stdout))
    try:
        yield
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()
        await drain


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


async def unfinished(conn: asyncpg.Connection) -> int:
    return int(
        await conn.fetchval("SELECT COUNT(*) FROM deliveries WHERE status IN ('queued', 'running')")
    )


async def drained(conn: asyncpg.Connection) -> None:
    """Return once no delivery is queued or running (the replicas are other processes)."""
    async with asyncio.timeout(DRAIN_TIMEOUT):
        while True:
            if not await unfinished(conn):
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
        env.sandbox.faults.latency = args.latency
        key_file = workdir / "app.pem"
        key_file.write_text(app_key()[0])
        conn = await asyncpg.connect(url)
        try:
            env.sandbox.reset_log()
            async with AsyncExitStack() as stack:
                start = time.perf_counter()
                await asyncio.gather(
                    *(
                        stack.enter_async_context(
                            replica(replica_env(env, key_file, url, free_port()))
                        )
                        for _ in range(replicas)
                    )
                )
                await drained(conn)
                seconds = time.perf_counter() - start
            row = await conn.fetchrow(
                "SELECT COUNT(*) FILTER (WHERE status = 'done') AS done,"
                " COALESCE(SUM(attempts), 0) AS attempts FROM deliveries"
            )
        finally:
            await conn.close()
        requests = sum(
            1
            for r in env.sandbox.requests
            if r.operation_id != "apps/create-installation-access-token"
        )
        return Run(replicas, seconds, requests, int(row["done"]), int(row["attempts"]))


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
