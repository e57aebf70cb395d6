"""retry-flaky and its replies under ghost writes: each job retried once, each comment once."""

from __future__ import annotations

import pytest

from bot.retry import text as retry_text
from sandbox.harness import Harness
from tests.e2e.test_pin_commands import bot_replies
from tests.e2e.test_retry_flaky import (
    INFRA,
    MAINTAINER,
    NEW,
    STRANGER,
    ask,
    pr_build,
    retried,
    row,
    seed_pr,
    sticky,
)


async def test_a_lost_job_retry_answer_is_found_not_repeated(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    await env.start()
    env.ci.faults.ghost_next(1, path_contains="/retry")

    await ask(env, number, MAINTAINER)

    assert len(retried(env)) == 1  # the ghost; the bot found its effect instead of retrying
    assert retry_text.OUTCOME_RUNNING in row(sticky(env, number), "GPU test A")


@pytest.mark.parametrize("status", [502, 503])
async def test_a_failed_job_retry_is_tried_again_later_and_counted_once(
    ci_env: Harness, status: int
) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    await env.start()
    env.ci.faults.fail_next(1, status=status, path_contains="/retry")

    await ask(env, number, MAINTAINER)

    assert len(retried(env)) == 2  # refused once, then done by the delivery's retry
    assert retry_text.OUTCOME_RUNNING in row(sticky(env, number), "GPU test A")


async def test_a_lost_sticky_comment_answer_makes_no_second_sticky(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    await env.start()
    env.sandbox.faults.ghost_next(1, "issues/create-comment")

    await ask(env, number, MAINTAINER)

    sticky(env, number)  # exactly one
    assert len(retried(env)) == 1


async def test_a_lost_refusal_answer_makes_no_second_refusal(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    await env.start()
    env.sandbox.faults.ghost_next(1, "issues/create-comment")

    await ask(env, number, STRANGER)

    replies = bot_replies(env, number)
    assert len(replies) == 1, replies
    assert retried(env) == []


async def test_a_failed_refusal_is_posted_on_the_retry_not_lost(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    await env.start()
    env.sandbox.faults.fail_next(1, status=502, operation="issues/create-comment")

    await ask(env, number, STRANGER)

    replies = bot_replies(env, number)
    assert len(replies) == 1, replies
