"""GitHub requests per reconcile tick, for P pins over U upstreams, through the real bot
and the GitHub stand-in.

Each world has U upstreams and P pins spread over them (each pin its own CMake file),
every pin already current (an earlier tick opened nothing: pinned at upstream's head).
After a warm-up tick (token, default branch and ETags known, as in a running bot), one
idle tick is measured: every GitHub request it made, how many were answered 304 (free
of the primary rate limit), how many were GraphQL queries (counted against GraphQL's
own budget of points, not the REST requests), and so the hour's REST cost against the
5,000 requests an installation may make per hour at the default interval (one tick per
300 s).

Usage: python bench/reconcile_budget.py [--pins 1,10,20,50,150] [--upstreams 1,5]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import tempfile
import time
from pathlib import Path

from bot.service.reconcile import enqueue_tick
from sandbox.harness import harness
from sandbox.vllm_shapes import DOWNSTREAM, many_pins

TICKS_PER_HOUR = 3600 // 300
PRIMARY_LIMIT = 5000
GRAPHQL = "graphql"  # a query, not a write: its POST costs GraphQL points, not REST requests


async def one_world(workdir: Path, pins: int, upstreams: int) -> dict[str, object]:
    async with harness(workdir, repositories=(DOWNSTREAM,), start=False) as env:
        sandbox = env.sandbox
        heads = {}
        for index in range(upstreams):
            name = f"upstream-org/lib{index}"
            sandbox.create_repo(name, files={"README.md": f"{index}\n"}, installation_id=1)
            heads[name] = sandbox.head(name)
        chosen = [f"upstream-org/lib{index % upstreams}" for index in range(pins)]
        files = many_pins([(f"pin{n}", up, heads[up]) for n, up in enumerate(chosen)])
        sandbox.create_repo(DOWNSTREAM, files=files, installation_id=2)
        await env.start()
        await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
        await env.settle()
        sandbox.reset_log()
        started = time.perf_counter()
        await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 301.0, 300.0)
        await env.settle()
        seconds = time.perf_counter() - started
        requests = [
            r for r in sandbox.requests if r.operation_id != "apps/create-installation-access-token"
        ]
        graphql = [r for r in requests if r.operation_id == GRAPHQL]
        counted = [r for r in requests if r.status != 304 and r.operation_id != GRAPHQL]
        writes = [
            r
            for r in requests
            if r.method in ("POST", "PATCH", "PUT", "DELETE") and r.operation_id != GRAPHQL
        ]
        return {
            "requests": len(requests),
            "not_modified": len([r for r in requests if r.status == 304]),
            "graphql": len(graphql),
            # The bump branches' PRs: one query for a sync of several pins, else a listing.
            "pr_reads": len(graphql) + sum(r.operation_id == "pulls/list" for r in requests),
            "counted": len(counted),
            "writes": len(writes),
            "seconds": seconds,
            "by_operation": collections.Counter(r.operation_id for r in requests),
        }


async def main(pin_counts: list[int], upstream_counts: list[int], verbose: bool) -> None:
    print(
        "| pins P | upstreams U | requests per idle tick | of which 304 | of which GraphQL | "
        "as U + PR reads + c | REST counted per hour | headroom of 5,000/h | writes | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for pins in pin_counts:
        for upstreams in upstream_counts:
            if upstreams > pins:
                continue
            with tempfile.TemporaryDirectory() as folder:
                got = await one_world(Path(folder), pins, upstreams)
            hourly = int(got["counted"]) * TICKS_PER_HOUR  # type: ignore[call-overload]
            print(
                f"| {pins} | {upstreams} | {got['requests']} | {got['not_modified']} "
                f"| {got['graphql']} "
                f"| {upstreams} + {got['pr_reads']} "
                f"+ {int(got['requests']) - upstreams - int(got['pr_reads'])} "  # type: ignore[call-overload]
                f"| {hourly} | {PRIMARY_LIMIT - hourly} | {got['writes']} "
                f"| {float(got['seconds']):.2f} |"  # type: ignore[arg-type]
            )
            if verbose:
                print(dict(got["by_operation"]))  # type: ignore[call-overload]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pins", default="1,10,20,50,150")
    parser.add_argument("--upstreams", default="1,5")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    asyncio.run(
        main(
            [int(x) for x in args.pins.split(",")],
            [int(x) for x in args.upstreams.split(",")],
            args.verbose,
        )
    )
