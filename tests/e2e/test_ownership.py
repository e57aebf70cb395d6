"""Whose a branch is, read from its commits when the bot remembers nothing.

The store can be lost (a new volume, a restore from an old backup). The bot must
still recognise its own bump and stale-entries PRs by their commits (its
trailers, its account as committer) and keep maintaining them, while a commit
that merely copies its message is still a human's.
"""

from __future__ import annotations

import os
from pathlib import Path

from bot.allowlist import text as allowlist_text
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM
from tests.e2e.conftest import DEEP_GEMM, FA3, audit_build, seed, seed_allowlist, stale_line
from tests.e2e.test_allowlist_flow import entries, open_pulls
from tests.e2e.test_bump_faults import HUMAN_PUSH
from tests.e2e.test_bump_flow import BRANCH, bump_pulls, merge_upstream


async def forget_everything(env: Harness) -> None:
    """Restart the bot on an empty store."""
    await env.stop()
    os.remove(env.settings.database)
    await env.start()


async def test_a_bump_pr_with_a_prune_on_top_is_still_the_bots_after_the_store_is_lost(
    ci_env: Harness,
) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    [pull] = bump_pulls(env)
    bumped = env.sandbox.head(DOWNSTREAM, BRANCH)
    await audit_build(env, branch=BRANCH, commit=bumped, lines=(stale_line(FA3),))
    assert env.sandbox.head(DOWNSTREAM, BRANCH) != bumped  # the prune commit is on top

    await forget_everything(env)
    newest = await merge_upstream(env, 2)
    await env.settle()

    [updated] = bump_pulls(env)
    assert updated["number"] == pull["number"]
    assert newest[:7] in updated["title"]  # updated in place, not left to a human
    bodies = [c["body"] for c in env.sandbox.comments(DOWNSTREAM, int(pull["number"]))]
    assert not [b for b in bodies if HUMAN_PUSH in b]


async def test_a_human_commit_copying_the_bots_message_is_still_a_humans(
    env: Harness,
) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    mine = env.sandbox.head(DOWNSTREAM, BRANCH)
    message = env.sandbox.store.read_commit(DOWNSTREAM, mine).message
    human = await env.sandbox.push_commit(
        DOWNSTREAM,
        {"docs/notes.md": "a fix\n"},
        message,  # the bot's trailers, copied
        branch=BRANCH,
        author=("Grace Hopper", "grace@example.com"),
    )
    await env.settle()

    await forget_everything(env)
    await merge_upstream(env, 2)
    await env.settle()

    assert env.sandbox.head(DOWNSTREAM, BRANCH) == human  # never force-pushed over


async def test_the_stale_entries_pr_is_still_the_bots_after_the_store_is_lost(
    ci_env: Harness, tmp_path: Path
) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    main = env.sandbox.head(DOWNSTREAM, "main")
    await audit_build(env, branch="main", commit=main, lines=(stale_line(FA3),))
    [pull] = open_pulls(env, allowlist_text.STALE_BRANCH)

    await forget_everything(env)
    await audit_build(env, branch="main", commit=main, lines=(stale_line(FA3, DEEP_GEMM),))

    assert [p["number"] for p in open_pulls(env, allowlist_text.STALE_BRANCH)] == [pull["number"]]
    assert entries(env, allowlist_text.STALE_BRANCH) == ()
