"""Merge races: a merge refused because the base moved, at an unchanged head, is tried again
through the inbox (no further event comes once CI is done), a few times, then left to
humans with one comment; a 405 for missing checks or reviews keeps waiting as before."""

from __future__ import annotations

from typing import Any

from bot.landing import text as landing_text
from bot.landing.rules import MERGE_RACE_RETRIES
from bot.store.kinds import Kind, pr_key
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM
from tests.e2e.test_landing import (
    BUILDKITE,
    CI,
    LANDING,
    MAINTAINER,
    PASSING,
    approve,
    bodies,
    current,
    finished_build,
    merges,
    open_bump,
)


async def approved_and_built(env: Harness) -> tuple[dict[str, Any], int]:
    """A bump PR, approved; its full build is left to the test to finish."""
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    await approve(env, pull, MAINTAINER)
    return pull, int(pull["number"])


async def test_a_409_at_an_unchanged_head_is_tried_again_and_lands(ci_env: Harness) -> None:
    env = ci_env
    pull, number = await approved_and_built(env)
    env.sandbox.faults.fail_next(1, status=409, operation="pulls/merge")

    await finished_build(env, pull, PASSING)

    assert merges(env) == [409, 200]
    assert current(env, number)["merged"] is True
    assert bodies(env, number) == []
    assert env.sandbox.violations == []


async def test_a_merge_that_keeps_losing_the_race_ends_in_one_comment(ci_env: Harness) -> None:
    env = ci_env
    pull, number = await approved_and_built(env)
    head = str(pull["head"]["sha"])
    env.sandbox.faults.fail_next(MERGE_RACE_RETRIES + 1, status=409, operation="pulls/merge")

    await finished_build(env, pull, PASSING)
    # later events change nothing: the head is left to humans
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()

    assert merges(env) == [409] * (MERGE_RACE_RETRIES + 1)
    [body] = bodies(env, number)
    assert body.startswith(f"Landing stopped: GitHub refused to merge `{head[:7]}` 4 times")
    assert landing_text.MARKER_MERGE_RACES.format(head=head) in body
    assert current(env, number)["merged"] is False
    doc = await env.running.services.store.get_state(Kind.LANDING, pr_key(DOWNSTREAM, number))
    assert doc is not None
    assert (doc["stopped_for"], doc["merge_races"]) == (head, {head: MERGE_RACE_RETRIES + 1})


async def test_a_405_for_a_missing_check_keeps_waiting_without_a_retry(ci_env: Harness) -> None:
    env = ci_env
    pull, number = await approved_and_built(env)
    head = str(pull["head"]["sha"])
    env.sandbox.require_checks(DOWNSTREAM, "main", ["docs/readthedocs"])

    await finished_build(env, pull, PASSING)

    assert merges(env) == [405]  # GitHub says "blocked": not a race, nothing tried again
    assert bodies(env, number) == []
    env.sandbox.set_status(DOWNSTREAM, head, "success", context="docs/readthedocs")
    await env.settle()
    assert merges(env) == [405, 200]


async def test_a_405_while_the_pr_is_mergeable_is_no_race_either(ci_env: Harness) -> None:
    """GitHub refuses for missing reviews (the stand-in has no review rules): the PR reads
    as mergeable, so the refusal is not the base moving, and landing waits."""
    env = ci_env
    pull, number = await approved_and_built(env)
    env.sandbox.faults.fail_next(1, status=405, operation="pulls/merge")

    await finished_build(env, pull, PASSING)

    assert merges(env) == [405]
    assert current(env, number)["merged"] is False
    assert bodies(env, number) == []
    doc = await env.running.services.store.get_state(Kind.LANDING, pr_key(DOWNSTREAM, number))
    assert doc is not None
    assert doc["merge_races"] == {}


async def test_a_head_that_moves_after_a_lost_race_voids_the_approval(ci_env: Harness) -> None:
    env = ci_env
    pull, number = await approved_and_built(env)
    approved = str(pull["head"]["sha"])
    env.sandbox.faults.fail_next(1, status=409, operation="pulls/merge")

    async def human_pushes() -> None:
        env.sandbox.commit(
            DOWNSTREAM, {"cmake/note.txt": "x\n"}, "A fix", branch=pull["head"]["ref"]
        )

    # The push lands between the lost race and the merge tried again: after the merge's
    # 409, the bot reads the PR once (the head has not moved: a race), and the next read
    # is the retried delivery's.
    async def after_the_409_read() -> None:
        env.sandbox.faults.before_next("pulls/get", human_pushes)

    async def on_the_merge() -> None:
        env.sandbox.faults.before_next("pulls/get", after_the_409_read)

    env.sandbox.faults.before_next("pulls/merge", on_the_merge)
    await finished_build(env, pull, PASSING)

    head = current(env, number)["head"]["sha"]
    assert head != approved
    assert merges(env) == [409]
    assert current(env, number)["merged"] is False
    reapproval = landing_text.REAPPROVAL_NEEDED.format(head7=head[:7], approved7=approved[:7])
    assert [body for body in bodies(env, number) if body.startswith(reapproval)] != []
    doc = await env.running.services.store.get_state(Kind.LANDING, pr_key(DOWNSTREAM, number))
    assert doc is not None
    assert doc["merge_races"] == {approved: 1}  # the race was lost once, then the head moved
