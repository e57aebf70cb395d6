"""Upstream merge → one bump PR, end to end through the GitHub stand-in."""

from __future__ import annotations

from typing import Any

from bot.core.sources import RECONCILE_EVENT
from bot.pins import text as bump_text
from bot.service.reconcile import enqueue_tick
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIN_FILE, PIN_TEMPLATE, UPSTREAM
from tests.e2e.conftest import seed

BRANCH = bump_text.bump_branch("flash-attention")
WRITES = {"POST", "PATCH", "PUT", "DELETE"}


NOT_BUMP_WRITES = {
    "apps/create-installation-access-token",  # a token changes nothing
    "issues/create",  # the dashboard issue, written on reconcile ticks
    "issues/update",
}


def writes(env: Harness) -> list[str]:
    """Requests of the flows under test that change something on GitHub."""
    return [
        f"{r.method} {r.path}"
        for r in env.sandbox.requests
        if r.method in WRITES and r.operation_id not in NOT_BUMP_WRITES
    ]


def bump_pulls(env: Harness, state: str = "all") -> list[dict[str, Any]]:
    return [pr for pr in env.sandbox.pulls(DOWNSTREAM, state=state) if pr["head"]["ref"] == BRANCH]


async def merge_upstream(env: Harness, n: int) -> str:
    return await env.sandbox.push_commit(
        UPSTREAM, {f"csrc/change_{n}.cu": f"// {n}\n"}, f"Upstream change {n} (#{170 + n})"
    )


async def test_upstream_merge_opens_one_bump_pr(env: Harness) -> None:
    pinned = seed(env)
    await env.start()
    new = await merge_upstream(env, 1)
    await env.settle()

    [pull] = bump_pulls(env)
    assert pull["state"] == "open"
    assert pull["title"] == f"Bump flash-attention from {pinned[:7]} to {new[:7]} (1 commit)"
    assert pull["base"]["ref"] == "main"
    assert "Upstream change 1" in pull["body"]
    assert "/vllm-project/flash-attention/pull/171)" in pull["body"]
    after = env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE)
    assert after == PIN_TEMPLATE.format(sha=new)  # only the GIT_TAG token changed
    assert env.sandbox.violations == []


async def test_new_upstream_commit_updates_the_same_pr_in_place(env: Harness) -> None:
    pinned = seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    [first] = bump_pulls(env)
    newest = await merge_upstream(env, 2)
    await env.settle()

    [pull] = bump_pulls(env)
    assert pull["number"] == first["number"]
    assert pull["title"] == f"Bump flash-attention from {pinned[:7]} to {newest[:7]} (2 commits)"
    assert "Upstream change 2" in pull["body"]
    assert "Upstream change 1" in pull["body"]
    assert env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE) == PIN_TEMPLATE.format(sha=newest)
    # the branch is rebuilt as one commit on main, not a pile of commits
    assert env.sandbox.head(DOWNSTREAM, BRANCH) != first["head"]["sha"]
    assert env.sandbox.violations == []


async def test_redelivery_and_duplicate_push_make_no_writes(env: Harness) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    push = next(
        d for d in reversed(env.sandbox.deliveries) if d.event == "push" and d.repo == UPSTREAM
    )
    env.sandbox.reset_log()

    # the same delivery id again: dropped at intake, before any GitHub call
    status = await env.sandbox.deliver("push", push.payload, delivery_id=push.delivery_id)
    await env.settle()
    assert status == 202
    assert env.sandbox.requests == []

    # the same push under a new delivery id: the bot looks, and writes nothing
    await env.sandbox.deliver("push", push.payload)
    await env.settle()
    assert env.sandbox.requests != []
    assert writes(env) == []
    assert len(bump_pulls(env)) == 1


async def test_pin_already_current_closes_the_bump_pr(env: Harness) -> None:
    seed(env)
    await env.start()
    new = await merge_upstream(env, 1)
    await env.settle()
    [pull] = bump_pulls(env)

    # a human bumps the pin on main by hand
    await env.sandbox.push_commit(
        DOWNSTREAM, {PIN_FILE: PIN_TEMPLATE.format(sha=new)}, "Bump FA by hand"
    )
    await env.settle()

    [closed] = bump_pulls(env)
    assert closed["number"] == pull["number"]
    assert closed["state"] == "closed"
    [comment] = env.sandbox.comments(DOWNSTREAM, pull["number"])
    assert "already pins `vllm-flash-attn`" in comment["body"]
    env.sandbox.reset_log()
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
    await env.settle()
    assert writes(env) == []


async def test_human_push_stops_force_pushes_and_is_said_once(env: Harness) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    [pull] = bump_pulls(env)
    human = await env.sandbox.push_commit(
        DOWNSTREAM,
        {"docs/notes.md": "why this bump needs a fix\n"},
        "Fix the build for the new FA",
        branch=BRANCH,
        author=("Grace Hopper", "grace@example.com"),
    )
    await env.settle()
    await merge_upstream(env, 2)
    await env.settle()

    assert env.sandbox.head(DOWNSTREAM, BRANCH) == human  # never force-pushed over
    comments = env.sandbox.comments(DOWNSTREAM, pull["number"])
    assert len(comments) == 1
    assert "will no longer force-push" in comments[0]["body"]
    assert len(bump_pulls(env)) == 1


async def test_reconcile_heals_a_missed_webhook(env: Harness) -> None:
    pinned = seed(env)
    new = env.sandbox.commit(UPSTREAM, {"csrc/x.cu": "// x\n"}, "Missed change (#180)")
    await env.start()  # the push happened while nobody listened
    await env.settle()
    assert bump_pulls(env) == []

    added = await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1000.0, 300.0)
    await env.settle()

    assert added == 1
    [pull] = bump_pulls(env)
    assert pull["title"] == f"Bump flash-attention from {pinned[:7]} to {new[:7]} (1 commit)"
    record = await env.running.services.store.get_delivery(f"reconcile:{DOWNSTREAM}:3")
    assert record is not None
    assert record.delivery.event == RECONCILE_EVENT


async def test_unchanged_reconcile_costs_no_rate_limit(env: Harness) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    # The first tick creates the dashboard issue, which changes the repository's
    # issue count (and so its ETags) once; the second tick sees that settle.
    for at in (1000.0, 1500.0):
        await enqueue_tick(env.running.inbox, (DOWNSTREAM,), at, 300.0)
        await env.settle()
    env.sandbox.reset_log()

    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 2000.0, 300.0)
    await env.settle()

    assert env.sandbox.requests, "the tick should look"
    assert [r.path for r in env.sandbox.requests if r.status != 304] == []


async def test_a_push_to_a_branch_with_a_slash_reads_its_head_off_the_compare(
    env: Harness,
) -> None:
    pinned = seed(env, config=CONFIG.replace("branch: main", "branch: release/v1"))
    env.sandbox.set_ref(UPSTREAM, "release/v1", pinned)
    await env.start()
    await env.settle()
    env.sandbox.reset_log()
    new = await env.sandbox.push_commit(
        UPSTREAM, {"csrc/r.cu": "// r\n"}, "Release fix (#9)", branch="release/v1"
    )
    await env.settle()

    [pull] = bump_pulls(env)
    assert new[:7] in pull["title"]
    assert f"/compare/{pinned}...{new})" in pull["body"]  # the shas, not the moving branch
    upstream_reads = [r.path for r in env.sandbox.requests if f"/{UPSTREAM}/" in r.path]
    assert upstream_reads == [f"/repos/{UPSTREAM}/compare/{pinned}...release/v1"]
    assert env.sandbox.violations == []
