"""The "CI routing" check on vLLM's real history: each pair of consecutive trees of the
real-data pack (base = the earlier, head = the later), checked as the bot checks a PR.

What it says, found on the pack and on the 202 commits of the fork that touched the
generator's files from 2026-01-26 to 2026-05-19 (each checked against its parent):

- The steps it lists as changed are exactly those whose queue, plugin, image or GPUs the
  real generator's outputs for the two trees differ in; every pair changes some.
- Nothing fatal: the generator read every tree, and so does the model.
- Two pairs fail, for unknown fields vLLM merged and the generator drops: a step written
  with ``gpu: h100`` and ``num_gpus: 1`` (vLLM #33365) and one with ``device: b200`` and
  ``num_gpus: 2`` (#33810) — both still there in May 2026, both run on one GPU. A
  repository that only wants to be warned of those says ``warnings: [unknown-field]``.
- One pair adds ``mirror: {torch_nightly: {}}`` on five steps (#37226): a target the
  generator modelled here ignores (ci-infra read it from 2026-04-15 to 2026-07-06). Said as
  such, it must be a rule a repository can relax, never "unreadable".
"""

from __future__ import annotations

from itertools import pairwise
from typing import get_args

import pytest

from bot.config.routing import RoutingConfig
from bot.config.types import Invariant
from bot.routing.invariants import UNREADABLE
from bot.routing.model import route
from bot.routing.tables import default_tables
from bot.routing_check.report import Report, pull_report
from tests.real_data import BUILD_ENVS, RealTree, needs_pack, trees

pytestmark = needs_pack

# The flow's inputs for a PR's build: its branch, not main's.
PR_ENV = {"BUILDKITE_BRANCH": BUILD_ENVS["pr"]["BUILDKITE_BRANCH"]}
UNKNOWN_FIELDS = {
    "2026-02-06-ac32e66cf": {
        (".buildkite/test_areas/misc.yaml", "gpu"),
        (".buildkite/test_areas/misc.yaml", "num_gpus"),
    },
    "2026-02-16-a21cedf4f": {(".buildkite/test_areas/benchmarks.yaml", "num_gpus")},
}
TORCH_NIGHTLY_PAIR = "2026-04-19-629d45eac"
TORCH_NIGHTLY_FILES = {
    ".buildkite/test_areas/models_basic.yaml": 2,
    ".buildkite/test_areas/models_language.yaml": 3,
}

Pair = tuple[RealTree, RealTree]


def pairs() -> list[Pair]:
    return list(pairwise(trees()))


def pair_id(pair: Pair) -> str:
    return pair[1].name  # a pair is named by its head: what the PR brought


def check(pair: Pair, routing: RoutingConfig | None = None) -> Report:
    base, head = pair
    routing = routing or RoutingConfig()
    return pull_report(base.files(), head.files(), routing, default_tables(), PR_ENV)


def generator_routes(tree: RealTree) -> dict[str, tuple[object, ...]]:
    steps = tree.generated("pr")["steps"]
    return {s["key"]: (s["queue"], s["plugin"], s["image_suffix"], s["gpus"]) for s in steps}


@pytest.mark.parametrize("pair", pairs(), ids=pair_id)
def test_the_changed_steps_are_those_the_generator_reroutes(pair: Pair) -> None:
    before, after = (generator_routes(tree) for tree in pair)
    rerouted = {key for key in {*before, *after} if before.get(key) != after.get(key)}
    report = check(pair)
    assert {change.key for change in report.changes} == rerouted
    assert report.worth_posting


@pytest.mark.parametrize("pair", pairs(), ids=pair_id)
def test_no_tree_is_refused(pair: Pair) -> None:
    for tree in pair:
        routes = route(tree.files(), env=PR_ENV, tables=default_tables())
        assert [str(p) for p in routes.problems if p.fatal] == []
    assert [f for f in check(pair).findings if f.problem.fatal] == []


@pytest.mark.parametrize("pair", pairs(), ids=pair_id)
def test_no_pair_fails_but_for_a_rule_the_repository_may_relax(pair: Pair) -> None:
    report = check(pair)
    assert [str(f.problem) for f in report.findings if f.invariant == UNREADABLE] == []
    relaxed = check(pair, RoutingConfig(warnings=get_args(Invariant)))
    assert relaxed.conclusion != "failure"


@pytest.mark.parametrize("pair", pairs(), ids=pair_id)
def test_what_the_check_concludes_with_the_defaults(pair: Pair) -> None:
    report = check(pair)
    name = pair[1].name
    mirrors = [f.problem for f in report.findings if "'torch_nightly'" in f.problem.message]
    fields = {
        (f.problem.file, f.problem.message.split("'")[1])
        for f in report.findings
        if f.invariant == "unknown-field" and f.problem not in mirrors
    }
    assert fields == UNKNOWN_FIELDS.get(name, set())
    expected = TORCH_NIGHTLY_FILES if name == TORCH_NIGHTLY_PAIR else {}
    assert {path: sum(p.file == path for p in mirrors) for path in expected} == expected
    assert len(mirrors) == sum(expected.values())
    assert len(report.findings) == len(fields) + len(mirrors)  # nothing else is new
    assert report.conclusion == ("failure" if report.findings else "success")


def test_the_pairs_are_the_packs() -> None:
    assert len(pairs()) == len(trees()) - 1 == 11
    assert {*UNKNOWN_FIELDS, TORCH_NIGHTLY_PAIR} <= {pair_id(pair) for pair in pairs()}
