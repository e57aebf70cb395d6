"""One PR per migration, end to end through the GitHub stand-in: the l4-eks sweep of
ci-routing.md opened on a reconcile tick with exactly the job-file lines it adds, left
alone by the next tick, closed once the sweep lands on main by hand; a ghost branch
creation still ends in one PR."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from bot.routing_check import migrate, migrate_text
from bot.routing_check.sweep import SweepPlan, plan_sweep
from bot.service.reconcile import enqueue_tick
from bot.store.kinds import Kind, migration_key
from sandbox.github_state import Label
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_ci_tree import SWEEP_LABELS, vllm_ci_files
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM
from tests.routing.test_sweep import MIGRATIONS

BRANCH = migrate_text.migration_branch("l4-eks")
WRITES = {"POST", "PATCH", "PUT", "DELETE"}
NOT_MIGRATION_WRITES = {
    "apps/create-installation-access-token",  # a token changes nothing
    "issues/create",  # the dashboard issue, written on reconcile ticks
    "issues/update",
}


def seed(env: Harness) -> str:
    world = World(env)
    pinned = world.upstream()
    return world.downstream(pinned, config=CONFIG + MIGRATIONS, files=vllm_ci_files())


def writes(env: Harness) -> list[str]:
    return [
        f"{r.method} {r.path}"
        for r in env.sandbox.requests
        if r.method in WRITES and r.operation_id not in NOT_MIGRATION_WRITES
    ]


def migration_pulls(env: Harness, state: str = "all") -> list[dict[str, Any]]:
    return [pr for pr in env.sandbox.pulls(DOWNSTREAM, state=state) if pr["head"]["ref"] == BRANCH]


def tree(env: Harness, ref: str) -> dict[str, str]:
    store = env.sandbox.store
    commit = store.read_commit(DOWNSTREAM, env.sandbox.head(DOWNSTREAM, ref))
    entries = store.ls_tree(DOWNSTREAM, commit.tree, recursive=True)
    return {entry.path: entry.sha for entry in entries if entry.type == "blob"}


def added_lines(old: str, new: str) -> list[str]:
    added = new.splitlines()
    for line in old.splitlines():  # what is left once the old lines are taken out
        added.remove(line)
    return [line.strip() for line in added]


async def tick(env: Harness, at: float) -> None:
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), at, 300.0)
    await env.settle()


async def test_a_tick_opens_one_pr_with_exactly_the_sweep(env: Harness) -> None:
    seed(env)
    await env.start()
    await tick(env, 1.0)

    [pull] = migration_pulls(env)
    assert pull["state"] == "open"
    assert pull["title"] == "Migrate 8 CI steps: l4-eks"
    main_sha = env.sandbox.head(DOWNSTREAM)
    assert f"proved on {main_sha[:7]}" in pull["body"]
    assert "audits the CUDA wheel on gpu_1_queue" in pull["body"]
    assert "gpu_1_queue → **l4-k8s**" in pull["body"]
    main, branch = tree(env, "main"), tree(env, BRANCH)
    changed = sorted(path for path in set(main) | set(branch) if main.get(path) != branch.get(path))
    assert changed == sorted(SWEEP_LABELS)  # the five job files, nothing else
    added: list[str] = []
    for path in changed:
        old = env.sandbox.read_file(DOWNSTREAM, "main", path) or ""
        added += added_lines(old, env.sandbox.read_file(DOWNSTREAM, BRANCH, path) or "")
    assert sorted(added) == sorted(["device: l4"] * 8 + ["num_devices: 1"] * 7)
    assert env.sandbox.violations == []


async def test_a_second_tick_writes_nothing(env: Harness) -> None:
    seed(env)
    await env.start()
    await tick(env, 1.0)
    env.sandbox.reset_log()
    await tick(env, 1000.0)
    assert writes(env) == []
    assert len(migration_pulls(env)) == 1


async def test_main_moving_updates_the_pr_in_place_only_when_the_edits_change(
    env: Harness,
) -> None:
    seed(env)
    await env.start()
    await tick(env, 1.0)
    [pull] = migration_pulls(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)

    env.sandbox.reset_log()
    await env.sandbox.push_commit(DOWNSTREAM, {"README.md": "# vllm, again\n"}, "Docs")
    await tick(env, 1000.0)
    assert writes(env) == []  # the branch already holds these very edits
    assert env.sandbox.head(DOWNSTREAM, BRANCH) == head

    path = sorted(SWEEP_LABELS)[0]
    edited = (env.sandbox.read_file(DOWNSTREAM, "main", path) or "") + "# a note\n"
    await env.sandbox.push_commit(DOWNSTREAM, {path: edited}, "Note a job file")
    await tick(env, 2000.0)
    [updated] = migration_pulls(env)
    assert (updated["number"], updated["state"]) == (pull["number"], "open")
    assert env.sandbox.head(DOWNSTREAM, BRANCH) != head
    assert "# a note" in (env.sandbox.read_file(DOWNSTREAM, BRANCH, path) or "")
    assert f"proved on {env.sandbox.head(DOWNSTREAM)[:7]}" in updated["body"]
    assert env.sandbox.violations == []


async def test_the_sweep_landed_by_hand_closes_the_pr_with_one_comment(env: Harness) -> None:
    seed(env)
    await env.start()
    await tick(env, 1.0)
    [pull] = migration_pulls(env)

    swept = vllm_ci_files(swept=True)
    await env.sandbox.push_commit(
        DOWNSTREAM, {path: swept[path] for path in SWEEP_LABELS}, "Move the L4 steps by hand"
    )
    await tick(env, 1000.0)

    [closed] = migration_pulls(env)
    assert (closed["number"], closed["state"]) == (pull["number"], "closed")
    [comment] = env.sandbox.comments(DOWNSTREAM, pull["number"])
    assert "Nothing is left to migrate for `l4-eks`" in comment["body"]
    env.sandbox.reset_log()
    await tick(env, 2000.0)
    assert writes(env) == []
    assert env.sandbox.violations == []


async def test_a_ghost_branch_creation_still_ends_in_one_pr(env: Harness) -> None:
    seed(env)
    await env.start()
    env.sandbox.faults.ghost_next(1, "git/create-ref")
    await tick(env, 1.0)

    assert env.sandbox.faults.injected, "the ghost was never injected"
    [pull] = migration_pulls(env)
    assert pull["state"] == "open"
    creations = [w for w in writes(env) if w.endswith("/git/refs")]
    assert len(creations) == 1  # the ghost was applied: the rerun found it, no second one
    assert env.sandbox.violations == []


async def test_a_human_push_makes_the_bot_step_back_and_say_so_once(env: Harness) -> None:
    seed(env)
    await env.start()
    await tick(env, 1.0)
    [pull] = migration_pulls(env)
    human = await env.sandbox.push_commit(
        DOWNSTREAM, {"NOTES.md": "mine\n"}, "Tweak the sweep", branch=BRANCH
    )
    path = sorted(SWEEP_LABELS)[0]
    edited = (env.sandbox.read_file(DOWNSTREAM, "main", path) or "") + "# a note\n"
    await env.sandbox.push_commit(DOWNSTREAM, {path: edited}, "Note a job file")
    await tick(env, 1000.0)
    await tick(env, 2000.0)

    assert env.sandbox.head(DOWNSTREAM, BRANCH) == human
    [comment] = env.sandbox.comments(DOWNSTREAM, pull["number"])
    assert "the bot leaves this branch alone now" in comment["body"]
    assert env.sandbox.violations == []


async def test_an_unproven_sweep_writes_nothing_and_records_why(
    env: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    def rerouting_another(*args: Any, **kw: Any) -> SweepPlan:
        # As if the edits also moved a step the migration did not select.
        return dataclasses.replace(plan_sweep(*args, **kw), others_changed=("other-step",))

    monkeypatch.setattr(migrate, "plan_sweep", rerouting_another)
    seed(env)
    await env.start()
    env.sandbox.reset_log()
    await tick(env, 1.0)

    assert migration_pulls(env) == []
    assert writes(env) == []
    store = env.running.services.store
    doc = await store.get_state(Kind.MIGRATION, migration_key(DOWNSTREAM, "l4-eks"))
    assert doc is not None
    assert doc["last_result"] == "failed"
    assert "`other-step`" in doc["last_failure"]


async def test_an_approved_migration_pr_is_landed_like_a_bump(env: Harness) -> None:
    """The same approval and landing rules as bump PRs, with the job files as landing
    paths: a maintainer approves, the bot labels it and merges once CI is green."""
    landing = 'landing: {labels_on_approval: [ready], paths: [".buildkite/test_areas/**"]}\n'
    world = World(env)
    pinned = world.upstream()
    world.downstream(pinned, config=CONFIG + MIGRATIONS + landing, files=vllm_ci_files())
    repo = env.sandbox.repo(DOWNSTREAM)
    repo.labels["ready"] = Label(env.sandbox.ids(), "ready", description="run the full CI")
    env.sandbox.set_permission(DOWNSTREAM, "maintainer", "maintain")
    env.sandbox.require_checks(DOWNSTREAM, "main", ["buildkite/ci"])
    await env.start()
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
    await env.settle()
    [pull] = migration_pulls(env)
    head = str(pull["head"]["sha"])
    env.sandbox.set_status(DOWNSTREAM, head, "pending", context="buildkite/ci")

    env.sandbox.submit_review(DOWNSTREAM, int(pull["number"]), "maintainer")
    await env.settle()
    [labelled] = migration_pulls(env)
    assert [label["name"] for label in labelled["labels"]] == ["ready"]
    assert labelled["merged"] is False

    env.sandbox.set_status(DOWNSTREAM, head, "success", context="buildkite/ci")
    await env.settle()
    [merged] = migration_pulls(env)
    assert merged["merged"] is True
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1000.0, 300.0)
    await env.settle()
    assert len(migration_pulls(env)) == 1  # landed: nothing left to move, no new PR
