"""Write pacing: the writes of 30 bump PRs at once, with GitHub's 80 a minute and without.

Drives the real GitHub App client (``bot.github.client``) against the GitHub
stand-in. Each of 30 "bump PRs" makes the five content-creating requests a
bump does, one after another: a blob, a tree, a commit, a branch ref and the
pull request; all 30 start together. The pacer runs on a virtual clock whose
sleep advances time at once, so a paced minute costs no real minute.

Reported per run, on the virtual clock: the writes sent, how long they took,
the most sent in any 60 s window, how many went beyond GitHub's 80 a minute
(GitHub would refuse those with a secondary rate limit; the stand-in does not
count them), the requests that failed, and the real time the run took.

Usage: python bench/write_pacing.py [--prs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import aiohttp

from bot.core.pacing import Pacer
from bot.github.client import (
    DEFAULT_CONCURRENCY,
    WRITES_PER_MINUTE,
    GitHubApp,
    GitHubClient,
    github_pacer,
)
from sandbox.harness import APP_ID, app_key, harness

REPO = "bench/downstream"
WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
WINDOW = 60.0
# Real seconds without a request starting or ending that count as quiet.
QUIET = 0.005


class VirtualClock:
    """Seconds since the run began, moved only by the pacer's sleeps.

    A sleep first lets the requests in flight finish (in real time, a few
    milliseconds on loopback), then moves the clock at once: as a real minute
    would, since requests sent before it take milliseconds, not minutes.
    Moving it while they are in flight would stamp them a minute late.
    """

    def __init__(self) -> None:
        self.now = 0.0
        self.busy: Callable[[], bool] = lambda: False
        self.activity = 0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        while True:
            before = self.activity
            await asyncio.sleep(QUIET)
            if not self.busy() and self.activity == before:
                break
        self.now += seconds


@dataclass(frozen=True)
class Run:
    name: str
    writes: int
    virtual_seconds: float
    most_in_a_minute: int
    beyond_limit: int
    failures: int
    wall_seconds: float
    waited: int


def most_in_any_window(times: list[float]) -> int:
    ordered = sorted(times)
    return max(
        (sum(1 for t in ordered[i:] if t < first + WINDOW) for i, first in enumerate(ordered)),
        default=0,
    )


def beyond(times: list[float], limit: int) -> int:
    """Writes sent when ``limit`` others had already been sent in the last minute."""
    ordered = sorted(times)
    return sum(1 for i in range(limit, len(ordered)) if ordered[i] < ordered[i - limit] + WINDOW)


async def one_pr(client: GitHubClient, n: int, prefix: str, head: str, base_tree: str) -> None:
    """The five writes of one bump PR, each needing the one before."""
    repo = f"/repos/{REPO}"
    blob = await client.post(
        f"{repo}/git/blobs", data={"content": f"PIN = {n}\n", "encoding": "utf-8"}
    )
    entry = {"path": f"pins/p{n}.txt", "mode": "100644", "type": "blob", "sha": blob["sha"]}
    tree = await client.post(f"{repo}/git/trees", data={"base_tree": base_tree, "tree": [entry]})
    commit = await client.post(
        f"{repo}/git/commits",
        data={"message": f"Bump p{n}", "tree": tree["sha"], "parents": [head]},
    )
    branch = f"{prefix}-bump-{n}"
    await client.post(
        f"{repo}/git/refs", data={"ref": f"refs/heads/{branch}", "sha": commit["sha"]}
    )
    await client.post(
        f"{repo}/pulls",
        data={"title": f"Bump p{n}", "head": branch, "base": "main", "body": "bench"},
    )


async def one_run(
    base_url: str, name: str, prs: int, make_pacer: Callable[[VirtualClock], Callable[[], Pacer]]
) -> Run:
    clock = VirtualClock()
    sent: list[float] = []

    async def on_start(
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestStartParams,
    ) -> None:
        clock.activity += 1
        if params.method in WRITES and "/repos/" in params.url.path:
            sent.append(clock())

    async def on_end(
        session: aiohttp.ClientSession, context: SimpleNamespace, params: object
    ) -> None:
        clock.activity += 1

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(on_start)
    trace.on_request_end.append(on_end)
    trace.on_request_exception.append(on_end)
    async with aiohttp.ClientSession(trace_configs=[trace]) as session:
        app = GitHubApp(
            session,
            app_id=APP_ID,
            private_key=app_key()[0],
            base_url=base_url,
            make_pacer=make_pacer(clock),
        )
        client = await app.repo_client(REPO)
        clock.busy = lambda: client.pacer.in_flight > 0
        head = (await client.getitem(f"/repos/{REPO}/git/ref/heads/main"))["object"]["sha"]
        base_tree = (await client.getitem(f"/repos/{REPO}/git/commits/{head}"))["tree"]["sha"]
        sent.clear()
        started = time.monotonic()
        outcomes = await asyncio.gather(
            *(one_pr(client, n, name, head, base_tree) for n in range(prs)),
            return_exceptions=True,
        )
        wall = time.monotonic() - started
    return Run(
        name=name,
        writes=len(sent),
        virtual_seconds=clock(),
        most_in_a_minute=most_in_any_window(sent),
        beyond_limit=beyond(sent, WRITES_PER_MINUTE),
        failures=sum(isinstance(outcome, BaseException) for outcome in outcomes),
        wall_seconds=wall,
        waited=client.pacer.waits,
    )


def paced(clock: VirtualClock) -> Callable[[], Pacer]:
    return lambda: github_pacer(DEFAULT_CONCURRENCY, clock=clock, sleep=clock.sleep)


def unpaced(clock: VirtualClock) -> Callable[[], Pacer]:
    return Pacer.unpaced


async def main(prs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with harness(Path(tmp), repositories=(REPO,), start=False) as env:
            env.sandbox.create_repo(REPO, files={"README.md": "x\n"}, installation_id=1)
            runs = [
                await one_run(env.sandbox.base_url, "paced", prs, paced),
                await one_run(env.sandbox.base_url, "unpaced", prs, unpaced),
            ]
    print(f"{prs} bump PRs at once, 5 writes each; GitHub allows {WRITES_PER_MINUTE} a minute")
    print(
        "| pacing | writes | virtual time | most in any 60 s | beyond 80/min "
        "| failed PRs | writes that waited (cap or rate) | real time |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for run in runs:
        print(
            f"| {run.name} | {run.writes} | {run.virtual_seconds:.0f} s | {run.most_in_a_minute} "
            f"| {run.beyond_limit} | {run.failures} | {run.waited} "
            f"| {run.wall_seconds:.2f} s |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--prs", type=int, default=30)
    asyncio.run(main(parser.parse_args().prs))
