"""The self-merge path honours check runs (GitHub Actions, other Apps), and a dismissed
approval stops a landing, end to end through the stand-ins."""

from __future__ import annotations

from bot.landing import text as landing_text
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM
from tests.e2e.test_landing import (
    BUILDKITE,
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

PRE_COMMIT = "pre-commit"
DOCS = "docs / build"


async def test_a_failed_check_run_blocks_the_merge_until_a_rerun_passes(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    failed = env.sandbox.report_check_run(
        DOWNSTREAM, head, PRE_COMMIT, status="completed", conclusion="failure"
    )
    await approve(env, pull, MAINTAINER)
    await finished_build(env, pull, PASSING)

    # Buildkite green, statuses none, but pre-commit failed: no merge is even tried.
    assert merges(env) == []
    assert current(env, number)["merged"] is False

    env.sandbox.report_check_run(DOWNSTREAM, head, PRE_COMMIT, status="queued")
    await env.settle()
    assert merges(env) == []  # the re-run is pending

    rerun = env.sandbox.report_check_run(
        DOWNSTREAM, head, PRE_COMMIT, status="completed", conclusion="success"
    )
    await env.settle()
    assert rerun["id"] != failed["id"]
    assert merges(env) == [200]
    assert current(env, number)["merged"] is True
    assert env.sandbox.violations == []


async def test_a_pending_check_run_is_waited_for_and_its_completion_lands(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    run = env.sandbox.report_check_run(DOWNSTREAM, head, DOCS, status="in_progress")
    await approve(env, pull, MAINTAINER)
    await finished_build(env, pull, PASSING)
    assert merges(env) == []

    # The check_run webhook alone moves the landing along.
    env.sandbox.update_check_run(DOWNSTREAM, int(run["id"]), conclusion="neutral")
    await env.settle()
    assert merges(env) == [200]
    assert current(env, number)["merged"] is True


async def test_a_named_required_check_is_waited_for_until_it_reports(ci_env: Harness) -> None:
    env = ci_env
    landing = "landing: {labels_on_approval: [], required_checks: [pre-commit, 'docs / *']}\n"
    pull = await open_bump(env, config=CONFIG + landing + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    # A failing check outside the required names does not count.
    env.sandbox.report_check_run(
        DOWNSTREAM, head, "nightly", status="completed", conclusion="failure"
    )
    await approve(env, pull, MAINTAINER)
    await finished_build(env, pull, PASSING)
    assert merges(env) == []  # pre-commit has not reported at all

    env.sandbox.report_check_run(
        DOWNSTREAM, head, PRE_COMMIT, status="completed", conclusion="success"
    )
    await env.settle()
    assert current(env, number)["merged"] is True


async def test_dismissing_the_approval_stops_the_landing_once(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    run = env.sandbox.report_check_run(DOWNSTREAM, head, PRE_COMMIT, status="in_progress")
    review = await approve(env, pull, MAINTAINER)
    await finished_build(env, pull, PASSING)

    env.sandbox.dismiss_review(DOWNSTREAM, number, int(review["id"]), "wrong PR", by=MAINTAINER)
    await env.settle()
    # The same dismissal delivered again says nothing new.
    delivery = next(d for d in reversed(env.sandbox.deliveries) if d.event == "pull_request_review")
    await env.sandbox.deliver("pull_request_review", delivery.payload)
    await env.settle()

    [body] = bodies(env, number)
    assert body.startswith(f"Landing stopped: @{MAINTAINER} dismissed the approval of `{head[:7]}`")
    assert landing_text.MARKER_DISMISSED.format(review=review["id"]) in body
    env.sandbox.update_check_run(DOWNSTREAM, int(run["id"]), conclusion="success")
    await env.settle()
    assert merges(env) == []
    assert current(env, number)["merged"] is False
    assert env.sandbox.violations == []
