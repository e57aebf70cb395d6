"""Every flow at once, with both stand-ins misbehaving: each effect exactly once.

A seeded mix of 10 % server errors, a few rate limits (GitHub's secondary 403,
Buildkite's 429) and 4 % ghost writes (applied, then answered 502) runs on GitHub
and Buildkite while an upstream merge becomes a bump PR, that PR's audit prunes
the allowlist on it, a maintainer asks `@bot retry-flaky` on a contributor's PR,
and the approved bump lands through a flaky build. Deliveries that ran out of
attempts are healed as in production: by the next reconcile tick or webhook.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.pins import text as bump_text
from bot.retry import text as retry_text
from bot.service.reconcile import enqueue_tick
from sandbox.harness import Harness
from sandbox.vllm_shapes import ALLOWLIST_CONFIG, CONFIG, DOWNSTREAM
from tests.e2e.conftest import ABI_CHECK_FILE, DEEP_GEMM, FA3, abi_check, audit_build, stale_line
from tests.e2e.test_bump_faults import branch_pushes
from tests.e2e.test_bump_flow import BRANCH, bump_pulls, merge_upstream
from tests.e2e.test_landing import (
    CI,
    LANDING,
    LOST_AGENT,
    MAINTAINER,
    PASSING,
    current,
    finished_build,
    merges,
    seed_landing,
)
from tests.e2e.test_pin_commands import bot_replies
from tests.e2e.test_retry_flaky import CONTRIBUTOR, INFRA, NEW, pr_build

FAULTS: dict[str, Any] = {"error_rate": 0.10, "limit_rate": 0.02, "ghost_rate": 0.04}
HUMAN_PUSH = bump_text.MARKER_HUMAN_PUSH.split(" pin=")[0]


async def heal(env: Harness) -> None:
    """What production does after an outage: the next reconcile tick, then quiet."""
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), env.running.services.clock(), 1.0)
    await env.settle()


def retried_jobs(env: Harness) -> list[str]:
    """Step keys of the jobs Buildkite retried (the stand-in's own record: a job retries
    once at most, so a second retry would show as a retried retry)."""
    return sorted(str(job.step_key) for job in env.ci.world.jobs.values() if job.retried)


def effective_merges(env: Harness) -> int:
    """Merges GitHub carried out: answered 200, or applied and answered 502 (a ghost)."""
    ghosts = [f for f in env.sandbox.faults.injected if f.kind == "ghost"]
    return merges(env).count(200) + sum(1 for f in ghosts if f.operation == "pulls/merge")


async def contributor_pr(env: Harness) -> int:
    head = env.sandbox.commit(
        DOWNSTREAM, {"vllm/model.py": "x = 1\n"}, "Add a model", branch="feature"
    )
    pull = env.sandbox.open_pull(DOWNSTREAM, head="feature", title="Add a model", by=CONTRIBUTOR)
    number = int(pull["number"])
    pr_build(env, number, head, INFRA, NEW)
    return number


@pytest.mark.parametrize("seed_value", [13, 14])
async def test_every_flow_under_faults_makes_each_effect_once(
    ci_env: Harness, seed_value: int
) -> None:
    env = ci_env
    seed_landing(env, config=CONFIG + ALLOWLIST_CONFIG + LANDING)
    env.sandbox.commit(DOWNSTREAM, {ABI_CHECK_FILE: abi_check(FA3, DEEP_GEMM)}, "ABI audit")
    env.ci.set_retry_outcome("gpu-a", state="passed")
    await env.start()
    env.sandbox.faults.randomly(seed=seed_value, **FAULTS)
    env.ci.faults.randomly(seed=seed_value + 100, **FAULTS)

    await merge_upstream(env, 1)  # 1. an upstream merge → the bump PR
    await env.settle()
    await heal(env)
    [bump] = bump_pulls(env)
    number = int(bump["number"])
    bumped = env.sandbox.head(DOWNSTREAM, BRANCH)
    # 2. its audit finds FA3 stale → a prune commit and the evidence on the PR
    await audit_build(env, branch=BRANCH, commit=bumped, lines=(stale_line(FA3),))
    # 3. retry-flaky on a contributor's PR
    other = await contributor_pr(env)
    env.sandbox.comment_as(DOWNSTREAM, other, MAINTAINER, "@bot retry-flaky")
    await env.settle()
    # 4. the bump is approved, CI reports, a flaky job is retried, it lands
    env.sandbox.submit_review(DOWNSTREAM, number, MAINTAINER)
    await env.settle()
    head = current(env, number)["head"]["sha"]
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await finished_build(env, current(env, number), LOST_AGENT, PASSING)

    env.sandbox.faults.clear()
    env.ci.faults.clear()
    await heal(env)
    env.sandbox.set_status(DOWNSTREAM, head, "success", context="ci/next-report")
    await env.settle()

    assert env.sandbox.faults.injected, "no GitHub fault was injected"
    assert env.ci.faults.injected, "no Buildkite fault was injected"
    pushes = branch_pushes(env)
    assert all(count == 1 for count in pushes.values()), pushes
    assert len(pushes) == 2  # the bump commit, then the prune commit on it
    assert len(bump_pulls(env)) == 1
    replies = bot_replies(env, number)
    assert len([r for r in replies if stale_line(FA3) in r]) == 1, replies
    assert not [r for r in replies if HUMAN_PUSH in r], replies
    stickies = [r for r in bot_replies(env, other) if retry_text.MARKER_STICKY in r]
    assert len(stickies) == 1, stickies
    # retry-flaky's infra job, landing's lost agent: each retried once, nothing else
    assert retried_jobs(env) == sorted([str(INFRA.step_key), str(LOST_AGENT.step_key)])
    assert effective_merges(env) == 1
    assert current(env, number)["merged"] is True
    assert env.sandbox.violations == []
