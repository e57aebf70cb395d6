"""The red-on-main follow-ups under failing and ghost writes, and on bad input.

Each write of the follow-ups (the revert commit, its branch, its PR, the issue, its edit,
the culprit comment) is ghosted in turn — applied by GitHub and answered 502 — and the
delivery retried: afterwards there is one issue, one revert PR pushed once, one comment.
Bad input gives a note on the issue (or, with no issue, a recorded reason) and no wrong
write: a rewritten history names no culprit and reverts nothing; a revert that no longer
applies says why; a step renamed between builds is no signal at all.
"""

from __future__ import annotations

import collections

import pytest

from bot.main_red import suspects as suspects_module
from bot.store.kinds import Kind, signal_key
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_ci_tree import AUDIT_FILE, AUDIT_KEY
from sandbox.vllm_shapes import DOWNSTREAM, PIPELINE

from .test_main_red import (
    AUDIT_FAILURE,
    REVERT_BRANCH,
    audit,
    incident_a,
    issues,
    main_build,
    others,
    revert_pulls,
)

FOLLOW_UP_WRITES = [
    "git/create-commit",
    "git/create-ref",
    "pulls/create",
    "issues/create",
    "issues/update",
    "issues/create-comment",
]


def branch_moves(env: Harness) -> collections.Counter[str]:
    """Each commit the revert branch was pointed at, and how many times."""
    moves = {
        d.delivery_id: str(d.payload["after"])  # a redelivery keeps its id
        for d in env.sandbox.deliveries
        if d.event == "push" and d.payload.get("ref") == f"refs/heads/{REVERT_BRANCH}"
    }
    return collections.Counter(moves.values())


@pytest.mark.parametrize("operation", FOLLOW_UP_WRITES)
async def test_a_ghost_write_anywhere_in_the_follow_ups_is_not_repeated(
    ci_env: Harness, operation: str
) -> None:
    w, culprit_pr, _culprit = await incident_a(ci_env)
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    ci_env.sandbox.faults.ghost_next(1, operation)
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])

    [issue] = issues(ci_env)
    [revert] = revert_pulls(ci_env)
    assert f"#{revert['number']}" in issue["body"]
    assert all(count == 1 for count in branch_moves(ci_env).values())
    comments = w.comments({"number": culprit_pr})
    assert len(comments) == 1
    assert ci_env.sandbox.faults.injected
    assert ci_env.sandbox.violations == []


async def test_failing_writes_are_retried_to_exactly_one_of_each(ci_env: Harness) -> None:
    w, culprit_pr, _culprit = await incident_a(ci_env)
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    for operation in FOLLOW_UP_WRITES:
        ci_env.sandbox.faults.fail_next(1, operation=operation)  # 6 retries of 8 allowed
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])

    assert len(issues(ci_env)) == 1
    assert len(revert_pulls(ci_env)) == 1
    assert len(w.comments({"number": culprit_pr})) == 1


async def test_a_rewritten_history_names_no_culprit_and_reverts_nothing(
    ci_env: Harness,
) -> None:
    w, culprit_pr, _culprit = await incident_a(ci_env)
    # Main was force-pushed: the green build's commit is no longer an ancestor of main.
    green = ci_env.sandbox.head(DOWNSTREAM)
    ci_env.sandbox.commit(DOWNSTREAM, {"vllm/lost.py": "# lost\n"}, "Lost", branch="old-main")
    lost = ci_env.sandbox.head(DOWNSTREAM, "old-main")
    await w.build(None, [audit("passed"), *others()], commit=lost, branch="main")
    await w.settle()
    assert green != lost
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])

    [issue] = issues(ci_env)
    assert "main's history was rewritten" in issue["body"]
    assert "No partial revert" in issue["body"]
    assert revert_pulls(ci_env) == []
    assert w.comments({"number": culprit_pr}) == []


async def test_a_revert_that_no_longer_applies_says_why_on_the_issue(ci_env: Harness) -> None:
    w, _culprit_pr, _culprit = await incident_a(ci_env)
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    # Someone rewrites the step in flow style meanwhile: the bot cannot splice it.
    misc = ci_env.sandbox.read_file(DOWNSTREAM, "main", AUDIT_FILE)
    assert misc is not None
    start = misc.index("  - label: Torch Stable ABI Audit")
    flow = (
        "  - {label: Torch Stable ABI Audit, key: torch-stable-abi-audit, device: cpu-small,"
        " commands: [pytest -v -s tests/abi]}\n"
    )
    ci_env.sandbox.commit(DOWNSTREAM, {AUDIT_FILE: misc[:start] + flow}, "Tidy")
    await w.settle()
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])

    [issue] = issues(ci_env)
    assert "No partial revert:" in issue["body"]
    assert "flow" in issue["body"]
    assert revert_pulls(ci_env) == []


async def test_a_step_renamed_between_builds_is_no_signal(ci_env: Harness) -> None:
    w, _pr, _culprit = await incident_a(ci_env)
    renamed = "torch-abi-audit"
    red = World.job(renamed, state="failed", log=list(AUDIT_FAILURE))
    await main_build(w, [red, *others()])
    await main_build(w, [red, *others()])

    assert issues(ci_env) == []
    doc = await ci_env.running.services.store.get_state(
        Kind.MAIN_SIGNAL, signal_key(DOWNSTREAM, PIPELINE, renamed)
    )
    assert doc is not None
    assert doc["state"] == "unknown"
    assert "no passing run" in doc["reason"] or "passed" in doc["reason"]


def test_the_notes_name_what_they_guard() -> None:
    assert "neither comments on a culprit nor proposes a revert" in suspects_module.NOTE_DIVERGED
    assert AUDIT_KEY in REVERT_BRANCH


async def test_a_last_green_commit_gone_from_github_names_no_culprit(ci_env: Harness) -> None:
    w, culprit_pr, _culprit = await incident_a(ci_env)
    gone = "0123456789abcdef0123456789abcdef01234567"  # built once, then force-pushed away
    await w.build(None, [audit("passed"), *others()], commit=gone, branch="main")
    await w.settle()
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])

    [issue] = issues(ci_env)
    assert "cannot be read from GitHub" in issue["body"]
    assert "No single culprit" in issue["body"]
    assert revert_pulls(ci_env) == []
    assert w.comments({"number": culprit_pr}) == []
