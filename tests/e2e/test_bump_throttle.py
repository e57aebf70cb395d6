"""Merge conflicts rebuild the bump branch; at most 3 pushes for one upstream commit."""

from __future__ import annotations

from bot.pins import text as bump_text
from bot.pins.state import Outcome
from bot.store.kinds import Kind
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM, PIN_FILE, PIN_TEMPLATE
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls, merge_upstream

BRANCH = bump_text.bump_branch("flash-attention")
SUBMODULES = "GIT_SUBMODULES ${VLLM_FLASH_ATTN_GIT_SUBMODULES}"  # the line after GIT_TAG


async def conflict_on_main(env: Harness, pinned: str, n: int) -> None:
    """Main edits the line next to GIT_TAG: the bump branch no longer merges cleanly."""
    text = PIN_TEMPLATE.format(sha=pinned).replace(SUBMODULES, f"{SUBMODULES} # {n}")
    await env.sandbox.push_commit(DOWNSTREAM, {PIN_FILE: text}, f"Tweak FA fetch {n}")
    await env.settle()


async def test_conflicted_bump_is_rebuilt_on_the_new_base(env: Harness) -> None:
    pinned = seed(env)
    await env.start()
    new = await merge_upstream(env, 1)
    await env.settle()
    first = env.sandbox.head(DOWNSTREAM, BRANCH)

    await conflict_on_main(env, pinned, 1)

    assert env.sandbox.head(DOWNSTREAM, BRANCH) != first
    text = env.sandbox.read_file(DOWNSTREAM, BRANCH, PIN_FILE) or ""
    assert f"GIT_TAG {new}" in text
    assert f"{SUBMODULES} # 1" in text  # built on the new base
    [pull] = bump_pulls(env)
    assert env.sandbox.pulls(DOWNSTREAM)[0]["number"] == pull["number"]


async def test_at_most_three_pushes_for_one_upstream_commit(env: Harness) -> None:
    pinned = seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    heads = {env.sandbox.head(DOWNSTREAM, BRANCH)}
    for n in range(1, 4):
        await conflict_on_main(env, pinned, n)
        heads.add(env.sandbox.head(DOWNSTREAM, BRANCH))

    assert len(heads) == 3  # the first push and two rebuilds; the third conflict waits
    state = await env.running.services.store.get_state(Kind.BUMP, f"{DOWNSTREAM}#flash-attention")
    assert state is not None
    assert state["last_result"] == Outcome.THROTTLED
