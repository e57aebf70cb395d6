"""Torch ABI audit evidence → allowlist follow-ups, end to end through both stand-ins."""

from __future__ import annotations

from typing import Any

from bot.allowlist import text as allowlist_text
from bot.edit.allowlist import read_allowlist
from bot.pins import text as bump_text
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM
from tests.e2e.conftest import (
    ABI_CHECK_FILE,
    DEEP_GEMM,
    FA3,
    ROCM,
    abi_check,
    audit_build,
    outside_line,
    seed_allowlist,
    stale_line,
)
from tests.e2e.test_bump_flow import merge_upstream, writes

BRANCH = bump_text.bump_branch("flash-attention")


def entries(env: Harness, ref: str) -> tuple[str, ...]:
    text = env.sandbox.read_file(DOWNSTREAM, ref, ABI_CHECK_FILE)
    assert text is not None
    return read_allowlist(text).entries


def open_pulls(env: Harness, branch: str) -> list[dict[str, Any]]:
    return [p for p in env.sandbox.pulls(DOWNSTREAM, state="open") if p["head"]["ref"] == branch]


async def bump_pr(env: Harness) -> dict[str, Any]:
    await merge_upstream(env, 1)
    await env.settle()
    [pull] = open_pulls(env, BRANCH)
    return pull


async def test_bump_pr_audit_prunes_the_stale_entry_it_owns(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM, ROCM)
    await env.start()
    pull = await bump_pr(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)

    await audit_build(env, branch=BRANCH, commit=head, lines=(stale_line(FA3),))

    assert entries(env, BRANCH) == (DEEP_GEMM, ROCM)
    assert entries(env, "main") == (FA3, DEEP_GEMM, ROCM)
    text = env.sandbox.read_file(DOWNSTREAM, BRANCH, ABI_CHECK_FILE)
    assert text == abi_check(DEEP_GEMM, ROCM)  # a minimal, ruff-formatted edit
    [comment] = env.sandbox.comments(DOWNSTREAM, pull["number"])
    assert stale_line(FA3) in comment["body"]
    assert "/web/" in comment["body"]  # links the audit job
    assert env.sandbox.violations == []


async def test_same_evidence_twice_makes_no_second_commit_or_comment(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    pull = await bump_pr(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    number = await audit_build(env, branch=BRANCH, commit=head, lines=(stale_line(FA3),))
    pruned = env.sandbox.head(DOWNSTREAM, BRANCH)
    env.sandbox.reset_log()

    await env.ci.finish_build("ci", number)  # Buildkite resends the same webhooks
    await env.settle()

    assert writes(env) == []
    assert env.sandbox.head(DOWNSTREAM, BRANCH) == pruned
    assert len(env.sandbox.comments(DOWNSTREAM, pull["number"])) == 1


async def test_last_entry_collapses_onto_one_line(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    await bump_pr(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    await audit_build(env, branch=BRANCH, commit=head, lines=(stale_line(FA3),))

    text = env.sandbox.read_file(DOWNSTREAM, BRANCH, ABI_CHECK_FILE) or ""
    assert f'ALLOWED_UNSTABLE_LIBRARIES: tuple[str, ...] = ("{DEEP_GEMM}",)\n' in text


async def test_stale_entries_of_other_pins_are_left_to_the_stale_pr(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    pull = await bump_pr(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    await audit_build(env, branch=BRANCH, commit=head, lines=(stale_line(FA3, DEEP_GEMM),))

    assert entries(env, BRANCH) == (DEEP_GEMM,)
    [comment] = env.sandbox.comments(DOWNSTREAM, pull["number"])
    assert f"`{DEEP_GEMM}`" in comment["body"]
    assert "does not own" in comment["body"]


async def test_unexpected_unstable_library_gets_a_comment_never_an_entry(
    ci_env: Harness,
) -> None:
    env = ci_env
    seed_allowlist(env, DEEP_GEMM)
    await env.start()
    pull = await bump_pr(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    new = [f"vllm_flash_attn/_fa4_C.cpython-3{v}-x86_64-linux-gnu.so" for v in (11, 12)]
    env.sandbox.reset_log()
    await audit_build(env, branch=BRANCH, commit=head, lines=(outside_line(*new),))

    assert entries(env, BRANCH) == (DEEP_GEMM,)
    assert [w for w in writes(env) if "/git/" in w] == []
    [comment] = env.sandbox.comments(DOWNSTREAM, pull["number"])
    assert "never adds allowlist entries" in comment["body"]
    assert '"vllm_flash_attn/_fa4_C.cpython-*-x86_64-linux-gnu.so",' in comment["body"]


async def test_deleted_pattern_that_still_covered_unstable_code_is_narrowed(
    ci_env: Harness,
) -> None:
    env = ci_env
    broad = "vllm_flash_attn/*.so"
    fa2 = "vllm_flash_attn/_vllm_fa2_C.abi3.so"
    seed_allowlist(env, broad, DEEP_GEMM)
    await env.start()
    await bump_pr(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    await audit_build(env, branch=BRANCH, commit=head, lines=(stale_line(broad),))
    assert entries(env, BRANCH) == (DEEP_GEMM,)

    # CI on the pruned head: FA2 is still unstable and nothing covers it now
    pruned = env.sandbox.head(DOWNSTREAM, BRANCH)
    await audit_build(env, branch=BRANCH, commit=pruned, lines=(outside_line(fa2),))

    assert entries(env, BRANCH) == (fa2, DEEP_GEMM)


async def test_prunes_survive_a_rebuild_for_a_newer_upstream(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    await bump_pr(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    await audit_build(env, branch=BRANCH, commit=head, lines=(stale_line(FA3),))

    newer = await merge_upstream(env, 2)
    await env.settle()

    assert entries(env, BRANCH) == (DEEP_GEMM,)
    [pull] = open_pulls(env, BRANCH)
    assert pull["title"].endswith(f"to {newer[:7]} (2 commits)")


async def test_evidence_for_an_older_head_is_ignored(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    await bump_pr(env)
    old_head = env.sandbox.head(DOWNSTREAM, BRANCH)
    await merge_upstream(env, 2)
    await env.settle()
    env.sandbox.reset_log()

    await audit_build(env, branch=BRANCH, commit=old_head, lines=(stale_line(FA3),))

    assert writes(env) == []
    assert entries(env, BRANCH) == (FA3, DEEP_GEMM)


async def test_main_audit_opens_one_stale_pr_and_closes_it_when_gone(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM, ROCM)
    await env.start()
    main = env.sandbox.head(DOWNSTREAM, "main")
    number = await audit_build(env, branch="main", commit=main, lines=(stale_line(FA3),))

    [pull] = open_pulls(env, allowlist_text.STALE_BRANCH)
    assert pull["title"] == allowlist_text.STALE_TITLE
    assert stale_line(FA3) in pull["body"]
    assert entries(env, allowlist_text.STALE_BRANCH) == (DEEP_GEMM, ROCM)  # ROCm kept

    env.sandbox.reset_log()
    await env.ci.finish_build("ci", number)
    await env.settle()
    assert writes(env) == []

    # a maintainer merges it; main's next audit is clean
    env.sandbox.merge_pull(DOWNSTREAM, pull["number"])
    await env.settle()
    main = env.sandbox.head(DOWNSTREAM, "main")
    await audit_build(env, branch="main", commit=main, lines=(), passed=True)
    assert open_pulls(env, allowlist_text.STALE_BRANCH) == []
    assert entries(env, "main") == (DEEP_GEMM, ROCM)


async def test_stale_pr_closed_when_someone_else_removed_the_entries(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    main = env.sandbox.head(DOWNSTREAM, "main")
    await audit_build(env, branch="main", commit=main, lines=(stale_line(FA3),))
    [pull] = open_pulls(env, allowlist_text.STALE_BRANCH)

    await env.sandbox.push_commit(DOWNSTREAM, {ABI_CHECK_FILE: abi_check(DEEP_GEMM)}, "by hand")
    await env.settle()
    main = env.sandbox.head(DOWNSTREAM, "main")
    await audit_build(env, branch="main", commit=main, lines=(), passed=True)

    assert open_pulls(env, allowlist_text.STALE_BRANCH) == []
    comments = env.sandbox.comments(DOWNSTREAM, pull["number"])
    assert "Closing: the entries this PR removes are no longer" in comments[-1]["body"]


async def test_builds_of_other_branches_and_pipelines_are_ignored(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3)
    env.ci.add_pipeline("nightly", repository=f"https://github.com/{DOWNSTREAM}.git")
    await env.start()
    env.sandbox.reset_log()
    main = env.sandbox.head(DOWNSTREAM, "main")
    await audit_build(env, branch="feature/x", commit=main, lines=(stale_line(FA3),))

    assert writes(env) == []
    assert env.ci.requests == [] or all("/builds/" not in r.path for r in env.ci.requests)


async def test_a_lost_stale_pr_answer_is_found_not_taken_for_a_human(ci_env: Harness) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM)
    await env.start()
    main = env.sandbox.head(DOWNSTREAM, "main")
    env.sandbox.faults.ghost_next(1, "pulls/create")
    number = await audit_build(env, branch="main", commit=main, lines=(stale_line(FA3),))

    [pull] = open_pulls(env, allowlist_text.STALE_BRANCH)
    env.sandbox.reset_log()
    await env.ci.finish_build("ci", number)  # the same evidence again: nothing to write
    await env.settle()
    assert writes(env) == []
    # newer evidence updates it: the PR is the bot's, not a human's
    later = (stale_line(FA3, DEEP_GEMM),)
    await audit_build(env, branch="main", commit=main, lines=later)
    assert open_pulls(env, allowlist_text.STALE_BRANCH)[0]["number"] == pull["number"]
    assert entries(env, allowlist_text.STALE_BRANCH) == ()
