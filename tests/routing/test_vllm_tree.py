"""The vLLM-shaped tree: incident A and the migration sweep, as ci-routing.md tells them."""

from __future__ import annotations

from collections import Counter

from bot.routing import checks
from bot.routing.model import Routes, route
from bot.routing.rules import derived_key
from bot.routing.tables import default_tables
from sandbox import vllm_ci_tree as tree


def routed(**switches: bool) -> Routes:
    return route(tree.vllm_ci_files(**switches), env={}, tables=default_tables())


def by_key(routes: Routes) -> dict[str, object]:
    return {step.key: step for step in routes.steps}


def test_the_tree_routes_cleanly() -> None:
    result = routed()
    assert result.problems == ()
    assert len(result.steps) == 104
    assert Counter(step.queue for step in result.steps)["l4-k8s"] == tree.STEPS_ON_L4_BEFORE


def test_the_sweep_moves_exactly_the_eight_steps() -> None:
    before, after = routed(), routed(swept=True)
    assert after.problems == ()
    moved = {
        step.key
        for old, step in zip(before.steps, after.steps, strict=True)
        if (old.queue, old.plugin, old.gpus) != (step.queue, step.plugin, step.gpus)
    }
    labels = [label for group in tree.SWEEP_LABELS.values() for label in group]
    assert moved == {derived_key(label) for label in labels}
    assert len(labels) == 8
    assert len(tree.SWEEP_LABELS) == 5
    assert Counter(step.queue for step in after.steps)["l4-k8s"] == tree.STEPS_ON_L4_AFTER
    steps = {step.key: step for step in after.steps}
    assert steps[tree.AUDIT_KEY].queue == "gpu_1_queue"
    assert steps[tree.AUDIT_KEY].image_suffix == ""
    multi_node = steps[derived_key(tree.MULTI_NODE_LABEL)]
    assert (multi_node.queue, multi_node.plugin) == ("gpu_4_queue", None)


def test_incident_a_moves_the_audit_to_the_cpu_image() -> None:
    audit = {step.key: step for step in routed(incident_a=True).steps}[tree.AUDIT_KEY]
    assert (audit.queue, audit.image_suffix, audit.depends_on) == (
        "small_cpu_queue_premerge",
        "-cpu",
        ("image-build-cpu",),
    )


def test_the_nightly_lane_pulls_tags_no_build_produces() -> None:
    result = route(tree.vllm_ci_files(), env={"TORCH_NIGHTLY": "1"}, tables=default_tables())
    messages = {problem.message for problem in result.problems}
    assert messages == {
        checks.MSG_NO_PRODUCER.format(suffix="-torch-nightly-cpu"),
        checks.MSG_NO_PRODUCER.format(suffix="-torch-nightly-arm64"),
    }
