"""Landing under lost answers: one merge, one label set, one retry, one comment."""

from __future__ import annotations

from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM
from tests.e2e.test_landing import (
    BUILDKITE,
    CI,
    LANDING,
    LOST_AGENT,
    MAINTAINER,
    PASSING,
    REAL,
    approve,
    bodies,
    current,
    finished_build,
    labels,
    landed_at,
    merges,
)
from tests.e2e.test_landing import open_bump as open_bump_pr


async def test_a_merge_whose_answer_was_lost_is_recorded_as_landed(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump_pr(env, config=CONFIG + LANDING + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    await approve(env, pull, MAINTAINER)
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()
    env.sandbox.faults.ghost_next(1, "pulls/merge")

    await finished_build(env, pull, PASSING)

    assert merges(env) == [502]  # applied by GitHub; the bot saw it merged, no second try
    assert current(env, number)["merged"] is True
    assert await landed_at(env) is not None
    assert env.sandbox.violations == []


async def test_labels_whose_answer_was_lost_are_added_once(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump_pr(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    env.sandbox.faults.ghost_next(1, "issues/add-labels")

    await approve(env, pull, MAINTAINER)

    assert labels(env, number) == ["ci-full", "ready"]
    assert env.sandbox.violations == []


async def test_a_flaky_job_retry_whose_answer_was_lost_is_not_repeated(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump_pr(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    env.ci.set_retry_outcome("gpu-a", state="passed")
    await approve(env, pull, MAINTAINER)
    env.ci.faults.ghost_next(1, path_contains="/retry")

    await finished_build(env, pull, LOST_AGENT, PASSING)

    retries = [r.path for r in env.ci.requests if r.method == "PUT"]
    assert len(retries) == 1
    records = await env.running.services.store.list_state("retry-job")
    assert len(records) == 1
    assert bodies(env, number) == []


async def test_a_stop_comment_whose_answer_was_lost_is_posted_once(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump_pr(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)
    env.sandbox.faults.ghost_next(1, "issues/create-comment")

    await finished_build(env, pull, REAL, PASSING)

    assert len(bodies(env, number)) == 1
    assert current(env, number)["merged"] is False


async def test_a_failed_stop_comment_is_posted_on_the_retry(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump_pr(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)
    env.sandbox.faults.fail_next(1, status=502, operation="issues/create-comment")

    await finished_build(env, pull, REAL, PASSING)

    assert len(bodies(env, number)) == 1
