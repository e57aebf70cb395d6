"""The l4-eks migration sweep planned over a vLLM-shaped tree (ci-routing.md, "Migration
sweep"): exactly eight steps move, the audit and the 2-node step stay, only lines are
added, and routing the result proves nothing else changed."""

from __future__ import annotations

from bot.config.parse import parse_repo_config
from bot.config.routing import StepMatch
from bot.routing.model import route
from bot.routing.tables import default_tables
from bot.routing_check.sweep import matches, plan_sweep
from sandbox.vllm_ci_tree import (
    AUDIT_KEY,
    MULTI_NODE_LABEL,
    STEPS_ON_L4_AFTER,
    SWEEP_LABELS,
    vllm_ci_files,
)

MIGRATIONS = """\
migrations:
  - name: l4-eks
    select: {queue: gpu_1_queue, plugin: docker}
    exclude:
      - {key: torch-stable-abi-audit, reason: audits the CUDA wheel on gpu_1_queue}
      - {multi_node: true, reason: multi-node stays off Kubernetes}
    set: {device: l4, num_devices: 1}
"""
SWEEP = parse_repo_config(MIGRATIONS).migrations[0]
ENV = {"BUILDKITE_BRANCH": "main"}


def test_the_sweep_moves_exactly_the_eight_one_gpu_l4_steps() -> None:
    files = vllm_ci_files()
    plan = plan_sweep(files, SWEEP, env=ENV, tables=default_tables())

    moved = sorted(move.before.label for move in plan.moves)
    assert moved == sorted(label for labels in SWEEP_LABELS.values() for label in labels)
    assert sorted(plan.edits) == sorted(SWEEP_LABELS)  # five files
    assert all(move.after is not None and move.after.queue == "l4-k8s" for move in plan.moves)
    assert plan.proven
    excluded = {step.key: reason for step, reason in plan.excluded}
    assert excluded[AUDIT_KEY] == "audits the CUDA wheel on gpu_1_queue"
    edited = {**files, **{path: new for path, (_old, new) in plan.edits.items()}}
    after = route(edited, env=ENV, tables=default_tables())
    assert sum(step.queue == "l4-k8s" for step in after.steps) == STEPS_ON_L4_AFTER
    assert next(s for s in after.steps if s.key == AUDIT_KEY).queue == "gpu_1_queue"
    assert next(s for s in after.steps if s.label == MULTI_NODE_LABEL).queue == "gpu_4_queue"


def test_the_diff_only_adds_lines_and_a_step_with_num_devices_gets_only_the_device() -> None:
    plan = plan_sweep(vllm_ci_files(), SWEEP, env=ENV, tables=default_tables())
    added = 0
    for old, new in plan.edits.values():
        old_lines, new_lines = old.splitlines(), new.splitlines()
        added_lines = list(new_lines)
        for line in old_lines:  # what is left once the old lines are taken out, in order
            added_lines.remove(line)
        assert {line.strip() for line in added_lines} <= {"device: l4", "num_devices: 1"}
        added += len(new_lines) - len(old_lines)
    assert added == 8 + 7  # a device each; num_devices for all but the one that had it


def test_a_second_sweep_changes_nothing() -> None:
    plan = plan_sweep(vllm_ci_files(swept=True), SWEEP, env=ENV, tables=default_tables())
    assert (plan.moves, dict(plan.edits)) == ((), {})


def test_a_match_needs_every_field_given() -> None:
    files = vllm_ci_files()
    steps = route(files, env=ENV, tables=default_tables()).steps
    audit = next(step for step in steps if step.key == AUDIT_KEY)
    assert matches(audit, StepMatch(key="torch-*", plugin="docker"))
    assert not matches(audit, StepMatch(key="torch-*", plugin="kubernetes"))
    assert not matches(audit, StepMatch(device="l4"))  # no device at all
    assert matches(audit, StepMatch(file=".buildkite/test_areas/*.yaml", multi_node=False))
    assert not matches(audit, StepMatch(file="other/*.yaml"))
