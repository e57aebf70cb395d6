"""The bump flow under failing and ghost writes: every effect exactly once.

A *ghost write* is applied by GitHub and answered 502 all the same. Each write
of the flow is ghosted in turn; then a seeded random mix of 5xx, secondary
rate limits and ghosts runs over several upstream merges. Afterwards there is
one bump PR, each upstream target was pushed once, and the bot never took its
own work for a human's.
"""

from __future__ import annotations

import collections

import pytest

from bot.pins import text as bump_text
from bot.service.reconcile import enqueue_tick
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM, PIN_FILE, PIN_TEMPLATE
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import BRANCH, bump_pulls, merge_upstream

BUMP_WRITES = [
    "git/create-tree",
    "git/create-commit",
    "git/create-ref",
    "git/update-ref",
    "pulls/create",
    "pulls/update",
]
HUMAN_PUSH = bump_text.MARKER_HUMAN_PUSH.split(" pin=")[0]


def branch_pushes(env: Harness) -> collections.Counter[str]:
    """How often each commit was pushed to the bump branch (from GitHub's push webhooks)."""
    pushes = {
        d.delivery_id: str(d.payload["after"])  # a redelivery keeps its id
        for d in env.sandbox.deliveries
        if d.event == "push" and d.payload.get("ref") == f"refs/heads/{BRANCH}"
    }
    return collections.Counter(pushes.values())


def pinned_target(env: Harness) -> str | None:
    text = env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE) or ""
    return next((t for t in text.split() if len(t) == 40), None)


def assert_exactly_once(env: Harness, newest: str) -> None:
    [pull] = bump_pulls(env)
    assert pull["state"] == "open"
    assert newest[:7] in pull["title"]
    assert env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE) == PIN_TEMPLATE.format(sha=newest)
    pushes = branch_pushes(env)
    assert all(count == 1 for count in pushes.values()), pushes
    comments = [str(c["body"]) for c in env.sandbox.comments(DOWNSTREAM, int(pull["number"]))]
    assert not [c for c in comments if HUMAN_PUSH in c], comments
    assert env.sandbox.violations == []


@pytest.mark.parametrize("operation", BUMP_WRITES)
async def test_a_ghost_write_anywhere_in_the_bump_is_not_repeated(
    env: Harness, operation: str
) -> None:
    seed(env)
    await env.start()
    env.sandbox.faults.ghost_next(1, operation)
    await merge_upstream(env, 1)
    await env.settle()
    env.sandbox.faults.ghost_next(1, operation)
    newest = await merge_upstream(env, 2)
    await env.settle()

    assert_exactly_once(env, newest)
    assert len(branch_pushes(env)) == 2  # one push per upstream target


@pytest.mark.parametrize("operation", ["pulls/create", "git/create-ref", "git/update-ref"])
async def test_a_failed_write_does_not_count_toward_the_push_throttle(
    env: Harness, operation: str
) -> None:
    seed(env)
    await env.start()
    env.sandbox.faults.fail_next(3, operation=operation)
    newest = await merge_upstream(env, 1)
    await env.settle()

    assert_exactly_once(env, newest)
    state = await env.running.services.store.get_state("bump", f"{DOWNSTREAM}#flash-attention")
    assert state is not None
    assert state["pushes"] == {newest: 1}


@pytest.mark.parametrize("seed_value", [1, 2, 3])
async def test_random_faults_over_many_merges_leave_one_pr_pushed_once_per_target(
    env: Harness, seed_value: int
) -> None:
    seed(env)
    await env.start()
    env.sandbox.faults.randomly(seed=seed_value, error_rate=0.10, limit_rate=0.03, ghost_rate=0.04)
    newest = ""
    for n in range(1, 7):
        newest = await merge_upstream(env, n)
        await env.settle()
    env.sandbox.faults.clear()
    # Deliveries that ran out of attempts are healed by the next tick, as in production.
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), env.running.services.clock(), 60.0)
    await env.settle()

    assert env.sandbox.faults.injected, "the seed injected no fault at all"
    assert_exactly_once(env, newest)
