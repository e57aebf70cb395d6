"""Upstream push webhook → bump PR: latency, critical-path round trips, request counts.

Runs the real bot against the GitHub stand-in with a fixed latency injected
into every GitHub API response (default 100 ms), then reports, for a new bump
PR, an update in place and a duplicate delivery:

- wall time from the push delivery to the bot going idle (the PR exists then);
- round trips on the critical path: the longest chain of GitHub requests in
  which each starts after the previous one finished (concurrent reads count once);
- GitHub requests in all, writes, and conditional answers (304: no rate limit).

Usage: python bench/bump_latency.py [--latency 0.1] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bot.service.reconcile import enqueue_tick
from sandbox.github_pipeline import RecordedRequest
from sandbox.harness import Harness, harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIN_FILE, PIN_TEMPLATE, UPSTREAM

WRITES = {"POST", "PATCH", "PUT", "DELETE"}
PR_WRITES = {"pulls/create", "pulls/update"}
VERBOSE = False


@dataclass(frozen=True)
class Sample:
    seconds: float
    round_trips: int
    requests: int
    writes: int
    not_modified: int


def critical_path(requests: list[RecordedRequest]) -> int:
    """Length of the longest chain of requests that ran one after another."""
    ordered = sorted(requests, key=lambda r: r.finished)
    longest: list[int] = []
    for i, request in enumerate(ordered):
        before = [longest[j] for j in range(i) if ordered[j].finished <= request.started]
        longest.append(1 + max(before, default=0))
    return max(longest, default=0)


def sample(env: Harness, start: float) -> Sample:
    """Figures for the requests since ``start`` (``time.monotonic``), up to the PR write."""
    requests = list(env.sandbox.requests)
    pr_writes = [r.finished for r in requests if r.operation_id in PR_WRITES]
    done = max(pr_writes) if pr_writes else max((r.finished for r in requests), default=start)
    requests = [r for r in requests if r.finished <= done]
    if VERBOSE:
        print([f"{r.operation_id}:{r.status}" for r in requests])
    return Sample(
        seconds=done - start,
        round_trips=critical_path(requests),
        requests=len(requests),
        writes=sum(r.method in WRITES for r in requests),
        not_modified=sum(r.status == 304 for r in requests),
    )


async def timed_push(env: Harness, n: int) -> Sample:
    env.sandbox.reset_log()
    start = time.monotonic()
    await env.sandbox.push_commit(UPSTREAM, {f"csrc/c{n}.cu": f"// {n}\n"}, f"Change {n} (#{n})")
    await env.settle()
    return sample(env, start)


async def one_run(workdir: Path, latency: float) -> dict[str, Sample]:
    async with harness(workdir, repositories=(DOWNSTREAM,), start=False) as env:
        sandbox = env.sandbox
        sandbox.create_repo(UPSTREAM, files={"README.md": "x\n"}, installation_id=1)
        pinned = sandbox.head(UPSTREAM)
        sandbox.create_repo(
            DOWNSTREAM,
            files={PIN_FILE: PIN_TEMPLATE.format(sha=pinned), ".github/followup-bot.yml": CONFIG},
            installation_id=2,
        )
        await env.start()
        # A running bot has reconciled before: token, default branch and ETags are warm.
        await enqueue_tick(env.running.inbox, (DOWNSTREAM,), time.time(), 300.0)
        await env.settle()
        sandbox.faults.latency = latency
        results = {"new PR": await timed_push(env, 1), "update": await timed_push(env, 2)}
        push = next(
            d for d in reversed(sandbox.deliveries) if d.event == "push" and d.repo == UPSTREAM
        )
        sandbox.reset_log()
        start = time.monotonic()
        await sandbox.deliver("push", push.payload)
        await env.settle()
        results["duplicate"] = sample(env, start)
        return results


async def main(latency: float, runs: int) -> None:
    collected: dict[str, list[Sample]] = {}
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            for name, value in (await one_run(Path(tmp), latency)).items():
                collected.setdefault(name, []).append(value)
    print(f"GitHub latency injected: {latency * 1000:.0f} ms per call; {runs} runs (median)")
    print("| case | push → PR written | critical-path round trips | requests | writes | 304s |")
    print("|---|---|---|---|---|---|")
    for name, samples in collected.items():
        med = statistics.median
        print(
            f"| {name} | {med(s.seconds for s in samples) * 1000:.0f} ms "
            f"| {med(s.round_trips for s in samples):.0f} | {med(s.requests for s in samples):.0f} "
            f"| {med(s.writes for s in samples):.0f} | {med(s.not_modified for s in samples):.0f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="list each case's requests")
    args = parser.parse_args()
    VERBOSE = args.verbose
    asyncio.run(main(args.latency, args.runs))
