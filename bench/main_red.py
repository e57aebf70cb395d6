"""What judging main costs: requests per finished main build, and the culprit search on a
range of 50 commits, through the real bot and the stand-ins.

The vLLM-shaped tree is on main with one green build; then 50 commits land, one of them
the migration PR that re-routes the torch ABI audit (incident A), and three red builds
and a green one finish. For each build the script counts what the bot asked of
Buildkite and GitHub (reads, writes) from the stand-ins' request logs, and how often the
routing model ran. Side by side, in the same run: what reading every commit of the range
would have cost (one commit read per commit), the obvious way to find who touched a file.

Usage: python bench/main_red.py [--commits 50]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bot.main_red import suspects as suspects_module
from bot.routing import model
from sandbox.harness import Harness, harness
from sandbox.scenario import World
from sandbox.vllm_ci_tree import (
    AUDIT_FILE,
    AUDIT_KEY,
    TEST_AREAS,
    before_incident_a,
    vllm_ci_files,
)
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIPELINE

CONFIG_TEXT = CONFIG + (
    f"buildkite:\n  organization: vllm\n  pipelines: [{PIPELINE}]\n"
    "routing:\n  ci_config: .buildkite/ci_config.yaml\n"
    "main_red:\n  revert: true\n"
)
FAILURE = ["FAILED tests/abi/test_stable_abi.py::test_extensions_are_stable - AssertionError"]
WRITES = {"POST", "PATCH", "PUT", "DELETE"}


class RouteCounter:
    """Counts routing-model runs made by the culprit search."""

    def __init__(self) -> None:
        self.runs = 0
        self._real = model.route

    def __call__(self, *args: object, **kwargs: object) -> model.Routes:
        self.runs += 1
        return self._real(*args, **kwargs)  # type: ignore[arg-type]


def jobs(audit_state: str) -> list[object]:
    log = FAILURE if audit_state == "failed" else ["stable"]
    return [
        World.job(AUDIT_KEY, state=audit_state, log=log),
        World.job("misc-1", log=["ok"]),
        World.job("cpu-full", log=["ok"]),
    ]


def snapshot(env: Harness) -> tuple[int, int]:
    assert env.buildkite is not None
    return len(env.sandbox.requests), len(env.buildkite.requests)


@dataclass(frozen=True)
class Cost:
    seconds: float
    buildkite: int
    buildkite_builds: int
    github_reads: int
    github_writes: int
    compares: int
    by_path: int


async def one_build(w: World, state: str) -> Cost:
    env = w.env
    gh_before, bk_before = snapshot(env)
    started = time.perf_counter()
    await w.build(None, jobs(state), commit=w.github.head(DOWNSTREAM), branch="main")  # type: ignore[arg-type]
    await w.settle()
    seconds = time.perf_counter() - started
    gh = env.sandbox.requests[gh_before:]
    assert env.buildkite is not None
    bk = env.buildkite.requests[bk_before:]
    ops = collections.Counter(r.operation_id for r in gh)
    return Cost(
        seconds=seconds,
        buildkite=len(bk),
        buildkite_builds=sum(1 for r in bk if r.path.endswith("/builds")),
        github_reads=sum(1 for r in gh if r.method not in WRITES),
        github_writes=sum(
            1
            for r in gh
            if r.method in WRITES and r.operation_id != "apps/create-installation-access-token"
        ),
        compares=ops["repos/compare-commits"],
        by_path=ops["repos/list-commits"],
    )


async def run(commits: int) -> None:
    counter = RouteCounter()
    # The culprit search's own calls of the model (not the revert's proof).
    setattr(suspects_module, "route", counter)  # noqa: B010
    with tempfile.TemporaryDirectory() as folder:
        async with harness(
            Path(folder), repositories=(DOWNSTREAM,), start=False, buildkite=True
        ) as env:
            w = World(env)
            files = before_incident_a()
            w.downstream(w.upstream(), config=CONFIG_TEXT, files=files)
            w.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
            await w.start()
            rows = {"green (first build)": await one_build(w, "passed")}
            culprit_at = commits // 2
            for index in range(commits):
                if index == culprit_at:
                    broken = vllm_ci_files(incident_a=True)[AUDIT_FILE]
                    w.github.commit(
                        DOWNSTREAM, {AUDIT_FILE: broken}, f"[CI] Migrate (#{24000 + index})"
                    )
                else:
                    path = f"vllm/module_{index}.py" if index % 3 else f"{TEST_AREAS}/cpu.yaml"
                    text = files[path] + f"# {index}\n" if path in files else f"# {index}\n"
                    files[path] = text
                    w.github.commit(DOWNSTREAM, {path: text}, f"Change {index} (#{23000 + index})")
            await w.settle()
            rows["red once"] = await one_build(w, "failed")
            counter.runs = 0
            rows["red twice: broken, follow-ups"] = await one_build(w, "failed")
            search_runs = counter.runs
            rows["red again (unchanged)"] = await one_build(w, "failed")
            rows["green again"] = await one_build(w, "passed")
    print(f"{commits} commits between the last green and the first red build")
    columns = [
        "build",
        "Buildkite requests (build listings)",
        "GitHub reads",
        "GitHub writes",
        "compares",
        "commit listings by path",
        "seconds",
    ]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for name, row in rows.items():
        cells = [
            name,
            f"{row.buildkite} ({row.buildkite_builds})",
            str(row.github_reads),
            str(row.github_writes),
            str(row.compares),
            str(row.by_path),
            f"{row.seconds:.2f}",
        ]
        print("| " + " | ".join(cells) + " |")
    search = rows["red twice: broken, follow-ups"]
    naive = 1 + commits  # one compare and one commit read per commit of the range
    searched = search.compares + search.by_path
    print(
        f"\nculprit search: {search_runs} routing-model runs, {search.compares} compare, "
        f"{search.by_path} commit listings by path = {searched} GitHub requests for the "
        f"range, against {naive} reading each commit ({naive / searched:.1f}x fewer)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=50)
    asyncio.run(run(parser.parse_args().commits))


if __name__ == "__main__":
    main()
