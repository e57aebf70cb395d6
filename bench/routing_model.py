"""The routing model on the vLLM-shaped tree: routing against reading the YAML alone.

Routes ``sandbox.vllm_ci_tree.vllm_ci_files()`` (16 files, 104 routed steps) ``--runs``
times with the default tables and, in the same run, only parses the same files with PyYAML's
``safe_load`` (the floor: every route reads each file once). Reports the median time per
pass of each and the ratio route/parse.

Usage: python bench/routing_model.py [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import yaml

from bot.routing.model import route
from bot.routing.tables import default_tables
from sandbox.vllm_ci_tree import vllm_ci_files


def timed(run: Callable[[], object], runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    return seconds


def main(runs: int) -> None:
    files = vllm_ci_files()
    tables = default_tables()
    routes = route(files, env={}, tables=tables)
    if routes.problems:
        raise SystemExit(f"the tree has problems: {routes.problems}")
    paths: dict[str, Callable[[], object]] = {
        "route (read, route, check)": lambda: route(files, env={}, tables=tables),
        "yaml.safe_load of each file": lambda: [yaml.safe_load(text) for text in files.values()],
    }
    median = {name: statistics.median(timed(run, runs)) for name, run in paths.items()}
    print(f"{len(files)} files, {len(routes.steps)} routed steps; median of {runs} runs")
    print("| path | ms per pass |")
    print("|---|---|")
    for name, value in median.items():
        print(f"| {name} | {value * 1000:.2f} |")
    routed, parsed = median.values()
    print(f"ratio route/parse: {routed / parsed:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    main(parser.parse_args().runs)
