"""One writer per sticky comment: a PR's retry-flaky and landing comments in one order.

The command runs under the PR's subject, a retried job's ``job.finished`` under its
pipeline's branch. Both used to write the sticky comment: when the command's first
create was answered 5xx, its retry and the job's refresh both looked for the comment,
found none and both posted it. The job's refresh is now handed to the inbox under the
PR's subject, so it runs after the command, on whichever replica takes it. Landing's
comments likewise: a finished build (Buildkite's subject) and a status (the
repository's) on two replicas both stopped the landing with a comment of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from bot.landing import text as landing_text
from bot.retry import text as retry_text
from bot.store.kinds import Kind
from bot.store.protocol import DeliveryStatus, Store
from sandbox.harness import BotProcess, Harness, harness, start_bot
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIPELINE
from tests.e2e.test_landing import (
    BRANCH,
    BUILDKITE,
    LANDING,
    REAL,
    REPO_URL,
    approve,
    bodies,
    current,
    open_bump,
)
from tests.e2e.test_landing import MAINTAINER as WRITER
from tests.e2e.test_landing import PASSING as LINT
from tests.e2e.test_retry_flaky import (
    INFRA,
    MAINTAINER,
    NEW,
    PASSING,
    ask,
    pr_build,
    retried,
    row,
    seed_pr,
    sticky,
)

CREATE_COMMENT = "issues/create-comment"
BOUND = 30.0  # seconds a wait on loopback may take before the test gives up


async def _done(store: Store, event: str) -> int:
    done = await store.list_deliveries(DeliveryStatus.DONE, limit=1000)
    return sum(1 for r in done if r.delivery.event == event)


async def _job_finished_done(store: Store, since: int, event: str = "job.finished") -> None:
    """Until an ``event`` delivery beyond the first ``since`` is done (bounded)."""
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        if await _done(store, event) > since:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the {event} delivery was never done")


async def _quiet(store: Store, *envs: Harness) -> None:
    """Until every replica has delivered everything the stand-ins sent (bounded)."""
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        for env in envs:
            await env.sandbox.flush()
            await env.ci.flush()
        if await store.count_unfinished() == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the inbox never emptied")


def _new_job(env: Harness) -> str:
    """The job the bot's retry of ``gpu-a`` made."""
    [new_job] = [
        j["id"]
        for j in env.ci.build(PIPELINE, 1)["jobs"]
        if j["step_key"] == "gpu-a" and not j.get("retried")
    ]
    return str(new_job)


def _stage_the_race(env: Harness, job_store: Store, number: int) -> list[str]:
    """The command's first create of the sticky is answered 502 (nothing applied); just
    before its retry's create is served, the retried job finishes and its
    ``job.finished`` is handled to the end. What happened, in order, is returned."""
    seen: list[str] = []

    async def job_finishes_meanwhile() -> None:
        seen.append("command's second create arrives")
        await env.ci.complete_job(_new_job(env))
        await _job_finished_done(job_store, since=0)
        stickies = [
            c
            for c in env.sandbox.comments(DOWNSTREAM, number)
            if retry_text.MARKER_STICKY in c["body"]
        ]
        seen.append(f"job.finished done; stickies meanwhile: {len(stickies)}")

    async def arm_second_create() -> None:
        env.sandbox.faults.before_next(CREATE_COMMENT, job_finishes_meanwhile)

    env.sandbox.faults.before_next(CREATE_COMMENT, arm_second_create)
    env.sandbox.faults.fail_next(1, status=502, operation=CREATE_COMMENT)
    return seen


async def test_a_job_finishing_while_the_command_retries_its_create_makes_one_sticky(
    ci_env: Harness,
) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    env.ci.set_retry_outcome("gpu-a", state="passed", after="on_demand")
    bot = await env.start()
    seen = _stage_the_race(env, bot.services.store, number)

    env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot retry-flaky")
    await env.settle()

    body = sticky(env, number)  # exactly one
    assert seen == [
        "command's second create arrives",
        "job.finished done; stickies meanwhile: 0",
    ]
    assert retry_text.OUTCOME_PASSED in row(body, "GPU test A")
    assert len(retried(env)) == 1


async def test_an_outcome_recorded_before_a_crash_still_reaches_the_sticky(
    ci_env: Harness,
) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    env.ci.set_retry_outcome("gpu-a", state="passed", after="on_demand")
    store = (await env.start()).services.store
    await ask(env, number, MAINTAINER)
    new_job = _new_job(env)
    # An earlier run of the job's job.finished recorded the outcome, then died before
    # the sticky was refreshed (or its follow-up submitted).
    record = await store.get_state(Kind.RETRY_JOB, new_job)
    assert record is not None
    await store.put_state(Kind.RETRY_JOB, new_job, {**record, "outcome": "passed"})

    await env.ci.complete_job(new_job)
    await env.settle()

    assert retry_text.OUTCOME_PASSED in row(sticky(env, number), "GPU test A")


async def test_job_finished_reads_nothing_of_github(ci_env: Harness) -> None:
    """The budget: ``job.finished`` decides from the payload and the store; only the
    follow-up of a job the bot retried, on a PR with a sticky, asks GitHub (once)."""
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW, PASSING)
    env.ci.set_retry_outcome("gpu-a", state="passed", after="on_demand")
    await env.start()
    await ask(env, number, MAINTAINER)
    new_job = _new_job(env)

    env.sandbox.reset_log()
    await env.ci.emit("job.finished", PIPELINE, 1, _job(env, "lint"))  # not retried by the bot
    await env.settle()
    assert _github_requests(env) == []

    await env.ci.complete_job(new_job)
    await env.settle()
    assert _github_requests(env) == ["issues/update-comment"]

    env.sandbox.reset_log()
    await env.ci.finish_build(PIPELINE, 1)  # every job's job.finished, the retried one again
    await env.settle()
    assert _github_requests(env) == []


def _job(env: Harness, step: str) -> str:
    return next(str(j["id"]) for j in env.ci.build(PIPELINE, 1)["jobs"] if j["step_key"] == step)


def _github_requests(env: Harness) -> list[str]:
    return [
        str(r.operation_id)
        for r in env.sandbox.requests
        if r.operation_id != "apps/create-installation-access-token"
    ]


@pytest.fixture
async def two_replicas(
    tmp_path: Path, postgres_url: str
) -> AsyncIterator[tuple[Harness, BotProcess]]:
    """The stand-ins and two replicas of the bot on one PostgreSQL database: GitHub's
    webhooks go to the first, Buildkite's to the second."""
    async with harness(
        tmp_path, repositories=(DOWNSTREAM,), start=False, buildkite=True, database=postgres_url
    ) as env:
        yield env, await _second(env)


async def _second(env: Harness) -> BotProcess:
    return await start_bot(replace(env.settings), sleep=env._record_wait)


async def test_two_replicas_on_postgres_make_one_sticky(
    two_replicas: tuple[Harness, BotProcess],
) -> None:
    env, other = two_replicas
    try:
        number, head = seed_pr(env)
        pr_build(env, number, head, INFRA, NEW)
        env.ci.set_retry_outcome("gpu-a", state="passed", after="on_demand")
        first = await env.start()
        env.ci.webhook_url = other.buildkite_webhook_url  # the job's webhook: the other one
        seen = _stage_the_race(env, other.services.store, number)

        env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot retry-flaky")
        await _quiet(first.services.store, env)

        body = sticky(env, number)  # exactly one
        assert seen == [
            "command's second create arrives",
            "job.finished done; stickies meanwhile: 0",
        ]
        assert retry_text.OUTCOME_PASSED in row(body, "GPU test A")
        assert len(retried(env)) == 1
        failed = await first.services.store.list_deliveries(DeliveryStatus.FAILED)
        assert failed == []
    finally:
        await other.stop()


async def test_two_replicas_stop_a_landing_with_one_comment(
    tmp_path: Path, postgres_url: str
) -> None:
    async with harness(
        tmp_path, repositories=(DOWNSTREAM,), start=False, buildkite=True, database=postgres_url
    ) as env:
        pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
        number = int(pull["number"])
        await approve(env, pull, WRITER)
        first, other = env.running, await _second(env)
        try:
            env.ci.webhook_url = other.buildkite_webhook_url
            head = str(current(env, number)["head"]["sha"])
            build = env.ci.create_build(
                PIPELINE,
                commit=head,
                branch=BRANCH,
                jobs=[REAL, LINT],
                pull_request={"id": str(number), "base": "main", "repository": REPO_URL},
            )
            statuses = await _done(first.services.store, "status")
            seen: list[str] = []

            async def a_status_meanwhile() -> None:
                # The build's "landing stopped" comment is about to be served: another
                # check of the head passes, and the first replica handles its status.
                env.sandbox.set_status(DOWNSTREAM, head, "success", context="other/check")
                await env.sandbox.flush()
                await _job_finished_done(first.services.store, statuses, event="status")
                seen.append("status done")

            env.sandbox.faults.before_next(CREATE_COMMENT, a_status_meanwhile)
            await env.ci.finish_build(PIPELINE, int(build["number"]))
            await _quiet(first.services.store, env)

            marker = landing_text.MARKER_STOPPED.format(head=head)
            stopped = [body for body in bodies(env, number) if marker in body]
            assert len(stopped) == 1, stopped
            assert seen == ["status done"]
            assert await first.services.store.list_deliveries(DeliveryStatus.FAILED) == []
        finally:
            await other.stop()
