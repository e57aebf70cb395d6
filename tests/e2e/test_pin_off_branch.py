"""A branch pin the tracked branch does not reach: refused, with where the commit is.

On another live branch upstream (vLLM pinned a side branch's commit) it is "not on the
tracked branch"; on no branch at all, upstream "rewrote its history". Either way nothing
is written, and what the bot learnt per branch head is not asked again.
"""

from __future__ import annotations

from bot.pins import off_branch
from bot.pins.state import Outcome
from bot.service.reconcile import enqueue_tick
from bot.store.kinds import Kind
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM, PIN_FILE, PIN_TEMPLATE, UPSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls, merge_upstream, writes
from tests.e2e.test_pin_commands import MAINTAINER, say

KEY = f"{DOWNSTREAM}#flash-attention"
COMPARE = "repos/compare-commits"


async def last_failure(env: Harness) -> str:
    state = await env.running.services.store.get_state(Kind.BUMP, KEY)
    assert state is not None
    assert state["last_result"] == Outcome.FAILED
    return str(state["last_failure"])


def pin(env: Harness, sha: str) -> None:
    env.sandbox.commit(DOWNSTREAM, {PIN_FILE: PIN_TEMPLATE.format(sha=sha)}, "Pin by hand")


def compared_with(env: Harness, sha: str) -> list[str]:
    """The compares asked since the log was reset whose head is ``sha``."""
    return [
        r.path for r in env.sandbox.requests if r.operation_id == COMPARE and r.path.endswith(sha)
    ]


async def test_a_pin_on_a_live_side_branch_is_off_the_tracked_branch(env: Harness) -> None:
    seed(env)
    gh = env.sandbox
    side = gh.commit(UPSTREAM, {"csrc/fa3.cu": "// fa3\n"}, "Try FA3 (#201)", branch="fa3-exp")
    gh.commit(UPSTREAM, {"csrc/fa3.cu": "// fa3 v2\n"}, "FA3, again (#202)", branch="fa3-exp")
    pin(env, side)  # vLLM pins the side branch's first commit
    await env.start()
    gh.reset_log()
    head = await merge_upstream(env, 1)
    await env.settle()

    assert writes(env) == []
    assert await last_failure(env) == off_branch.REASON_OTHER_BRANCH.format(
        value7=side[:7],
        upstream=UPSTREAM,
        branch="main",
        head7=head[:7],
        status="diverged",
        holder="fa3-exp",
    )
    assert "rewritten" not in await last_failure(env)
    assert len(compared_with(env, side)) == 1  # fa3-exp's head...the pin: behind

    # Upstream moves on: fa3-exp did not, so it is not asked again.
    gh.reset_log()
    await merge_upstream(env, 2)
    await env.settle()
    assert "`fa3-exp`" in await last_failure(env)
    assert compared_with(env, side) == []
    assert writes(env) == []
    assert gh.violations == []


async def test_a_pin_on_no_branch_is_rewritten_history(env: Harness) -> None:
    pinned = seed(env)
    gh = env.sandbox
    [parent] = gh.store.read_commit(UPSTREAM, pinned).parents
    gh.set_ref(UPSTREAM, "old-feature", parent)  # a branch from before the pin
    gh.set_ref(UPSTREAM, "main", parent)  # upstream force-pushes the pin away
    await env.start()
    gh.reset_log()
    head = await merge_upstream(env, 1)
    await env.settle()

    assert writes(env) == []
    assert await last_failure(env) == off_branch.REASON_NO_BRANCH.format(
        value7=pinned[:7], upstream=UPSTREAM, branch="main", head7=head[:7], status="diverged"
    )
    assert len(compared_with(env, pinned)) == 1  # old-feature; main answered already

    gh.reset_log()
    await merge_upstream(env, 2)
    await env.settle()
    assert "upstream history was rewritten" in await last_failure(env)
    assert compared_with(env, pinned) == []  # no branch moved but main: nothing to ask


async def test_many_branches_are_looked_through_over_a_few_syncs(env: Harness) -> None:
    pinned = seed(env)
    gh = env.sandbox
    [parent] = gh.store.read_commit(UPSTREAM, pinned).parents
    extra = 5
    for n in range(off_branch.MAX_LOOKS_PER_SYNC + extra):
        gh.set_ref(UPSTREAM, f"feature-{n:02}", parent)
    gh.set_ref(UPSTREAM, "main", parent)
    await env.start()
    gh.reset_log()
    head = await merge_upstream(env, 1)
    await env.settle()

    assert await last_failure(env) == off_branch.REASON_NOT_YET.format(
        value7=pinned[:7],
        upstream=UPSTREAM,
        branch="main",
        head7=head[:7],
        status="diverged",
        left=extra,
    )
    assert len(compared_with(env, pinned)) == off_branch.MAX_LOOKS_PER_SYNC

    gh.reset_log()
    await merge_upstream(env, 2)
    await env.settle()
    assert "upstream history was rewritten" in await last_failure(env)
    assert len(compared_with(env, pinned)) == extra  # only the ones not looked at yet
    assert bump_pulls(env) == []


async def test_a_commit_chosen_beside_the_pin_on_the_tracked_branch(env: Harness) -> None:
    base = seed(env)
    gh = env.sandbox
    env.sandbox.set_permission(DOWNSTREAM, MAINTAINER, "maintain")
    # main: base - chosen - merge; the merged topic: base - pinned. Both are on main, and
    # neither comes before the other.
    pinned = gh.commit(UPSTREAM, {"csrc/b.cu": "// b\n"}, "Change B (#302)", branch="topic")
    chosen = gh.commit(UPSTREAM, {"csrc/a.cu": "// a\n"}, "Change A (#301)")
    assert gh.store.read_commit(UPSTREAM, pinned).parents == (base,)
    tree = gh.store.merge_trees(UPSTREAM, chosen, pinned)
    assert tree is not None
    who = gh.store.read_commit(UPSTREAM, chosen).committer
    merge = gh.store.commit_tree(UPSTREAM, tree, [chosen, pinned], "Merge topic", who, who)
    gh.set_ref(UPSTREAM, "main", merge)
    pin(env, pinned)
    await env.start()
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
    await env.settle()
    [pull] = bump_pulls(env)  # to the merge: the pin comes before it
    gh.reset_log()

    reply = await say(
        env, int(pull["number"]), MAINTAINER, f"@bot bump flash-attention --to {chosen}"
    )

    assert (
        off_branch.REASON_TRACKED_BRANCH.format(
            value7=pinned[:7], upstream=UPSTREAM, branch="main", head7=chosen[:7], status="diverged"
        )
        in reply
    )
    assert [w for w in writes(env) if "/comments" not in w] == []
