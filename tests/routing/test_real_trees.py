"""The routing model against vLLM's real pipeline generator, step for step.

The real-data pack (tests/real_data.py) holds twelve of vLLM's real `.buildkite` trees
(January to May 2026) and, for each, what the generator emitted for a main build, a PR build
and a torch-nightly build. Every step must come out the same: its key (keys derived from
labels included), queue, plugin, image suffix, GPUs of a pod, group, label, dependencies and
the line that wrote it; and nothing the generator accepted may be fatal here.

The generator's ``depends_on`` also holds the ``block-<key>`` steps it puts in front of steps
that should not run: that depends on the changed files, which the model does not decide, so
those keys are left out of the comparison.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.cli.routes import EXIT_OK, EXIT_PROBLEMS, routes_command
from bot.routing.model import RoutedStep, route
from bot.routing.rules import PLUGIN_KUBERNETES
from bot.routing.tables import default_tables
from tests.real_data import BUILD_ENVS, BUILDS, RealTree, needs_pack, tree_ids, trees

pytestmark = needs_pack

BLOCK_PREFIX = "block-"


def generated(step: Mapping[str, Any]) -> tuple[object, ...]:
    depends_on = tuple(k for k in step["depends_on"] or () if not k.startswith(BLOCK_PREFIX))
    return (
        step["key"],
        step["queue"],
        step["plugin"],
        step["image_suffix"],
        step["gpus"],
        step["group"],
        step["label"],
        depends_on,
        step["file"],
        step["line"],
    )


def modelled(step: RoutedStep) -> tuple[object, ...]:
    written = not step.pr_only  # the generator's own pre-commit step has no file
    return (
        step.key,
        step.queue,
        step.plugin,
        step.image_suffix,
        step.gpus if step.plugin == PLUGIN_KUBERNETES else None,
        step.group,
        step.label,
        step.depends_on,
        step.file if written else None,
        step.line if written else None,
    )


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("tree", trees(), ids=list(tree_ids()))
def test_every_step_is_routed_as_the_generator_routed_it(tree: RealTree, build: str) -> None:
    recorded = tree.generated(build)
    routes = route(tree.files(), env=BUILD_ENVS[build], tables=default_tables())
    assert [str(p) for p in routes.problems if p.fatal] == []
    expected = Counter(generated(step) for step in recorded["steps"])
    actual = Counter(modelled(step) for step in routes.steps)
    assert actual - expected == Counter()
    assert expected - actual == Counter()


def test_the_pack_covers_what_the_issue_names() -> None:
    """The shapes that broke the model before are in the pack: a guard that the test above
    keeps testing them if the pack changes."""
    texts = "\n".join(text for tree in trees() for text in tree.files().values())
    assert "depends_on: ~" in texts
    assert "*cpu_distributed_deps" in texts  # an alias in hardware_tests/cpu.yaml
    derived = [
        step
        for tree in trees()
        for step in tree.generated("main")["steps"]
        if step["key"] == "spec-decode-mtp-hybrid-b200"
    ]
    assert derived


@pytest.mark.parametrize("tree", trees(), ids=list(tree_ids()))
def test_routes_reads_every_real_tree_without_refusing_it(tree: RealTree, tmp_path: Path) -> None:
    import io

    repo = tree.checkout(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = routes_command(
        repo, pull_request=None, env_items=["BUILDKITE_BRANCH=main"], as_json=True, out=out, err=err
    )
    assert code in (EXIT_OK, EXIT_PROBLEMS)
    assert err.getvalue() == ""


@pytest.mark.parametrize("build", BUILDS)
def test_routes_json_starts_with_the_generators_own_fields(build: str, tmp_path: Path) -> None:
    import io
    import json

    tree = trees()[-1]
    repo = tree.checkout(tmp_path)
    env = BUILD_ENVS[build]
    items = [f"{name}={value}" for name, value in env.items() if name != "BUILDKITE_PULL_REQUEST"]
    pull = int(env["BUILDKITE_PULL_REQUEST"]) if "BUILDKITE_PULL_REQUEST" in env else None
    out = io.StringIO()
    routes_command(repo, pull_request=pull, env_items=items, as_json=True, out=out, err=out)
    ours = json.loads(out.getvalue())["steps"]
    names = ("key", "label", "group", "queue", "plugin", "image_suffix", "gpus", "file", "line")
    pick = lambda step: tuple(  # noqa: E731
        [step[name] for name in names]
        + [tuple(k for k in step["depends_on"] or () if not k.startswith(BLOCK_PREFIX))]
    )
    assert Counter(map(pick, ours)) == Counter(map(pick, tree.generated(build)["steps"]))


def test_a_sweep_of_the_intel_cpu_queue_moves_every_step_the_generator_puts_there() -> None:
    """vLLM's hardware_tests/cpu.yaml shares a list through an alias: its steps are swept."""
    from bot.config.routing import MigrationConfig
    from bot.routing_check.sweep import plan_sweep

    tree = trees()[-1]
    on_queue = {s["key"] for s in tree.generated("main")["steps"] if s["queue"] == "intel-cpu"}
    migration = MigrationConfig.model_validate(
        {"name": "cpu", "select": {"queue": "intel-cpu"}, "set": {"device": "cpu"}}
    )
    plan = plan_sweep(tree.files(), migration, env=BUILD_ENVS["main"], tables=default_tables())
    assert plan.proven
    assert {move.before.key for move in plan.moves} == on_queue
    assert "cpu-distributed-tests-dp-tp" in on_queue  # the step that holds the alias
    assert list(plan.edits) == [".buildkite/hardware_tests/cpu.yaml"]
