"""The race and error paths: each one a real situation the stand-ins can stage.

A push landing just as the bot merges (GitHub answers 409), a step that forbids manual
retries (Buildkite refuses the landing's retry), another run opening the bump PR between
the bot's listing and its create (GitHub answers 422), and a command the bot cannot read.
"""

from __future__ import annotations

from bot.landing import text as landing_text
from bot.pins import text as bump_text
from bot.retry.text import REPLY_ERROR
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls, merge_upstream
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

BRANCH = bump_text.bump_branch("flash-attention")


async def test_a_push_just_before_the_merge_voids_the_approval(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number, approved = int(pull["number"]), str(pull["head"]["sha"])
    await approve(env, pull, MAINTAINER)

    async def human_pushes() -> None:
        env.sandbox.commit(DOWNSTREAM, {"cmake/note.txt": "x\n"}, "A fix", branch=BRANCH)

    env.sandbox.faults.before_next("pulls/merge", human_pushes)
    await finished_build(env, pull, PASSING)

    assert merges(env) == [409]  # GitHub refused the approved sha: the head had moved
    head = current(env, number)["head"]["sha"]
    assert head != approved
    assert current(env, number)["merged"] is False
    said = bodies(env, number)
    reapproval = landing_text.REAPPROVAL_NEEDED.format(head7=head[:7], approved7=approved[:7])
    assert [body for body in said if body.startswith(reapproval)] != []
    assert len(said) == 2  # and the note that a human now owns the branch
    assert env.sandbox.violations == []


async def test_a_step_that_forbids_retries_leaves_the_landing_to_humans(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)
    lost = JobSpec(
        "gpu-a", "GPU test A", state="failed", exit_status=-1, manual_retry_allowed=False
    )

    await finished_build(env, pull, lost, PASSING)

    retries = [r for r in env.ci.requests if r.method == "PUT"]
    assert [r.status for r in retries] == [400]  # tried once, refused by Buildkite
    [body] = bodies(env, number)
    assert body.startswith("Landing stopped: the CI build [#")
    assert "could not be retried" in body
    assert "[GPU test A]" in body
    assert current(env, number)["merged"] is False


async def test_a_bump_pr_opened_meanwhile_is_adopted_not_duplicated(env: Harness) -> None:
    seed(env)
    await env.start()

    async def another_run_opens_it() -> None:
        env.sandbox.open_pull(DOWNSTREAM, head=BRANCH, title="Bump (other run)", by=bot(env))

    env.sandbox.faults.before_next("pulls/create", another_run_opens_it)
    new = await merge_upstream(env, 1)
    await env.settle()

    [pull] = bump_pulls(env)
    creates = [r.status for r in env.sandbox.requests if r.operation_id == "pulls/create"]
    assert creates == [422]  # "A pull request already exists": the one just opened
    assert pull["state"] == "open"
    assert new[:7] in pull["title"]  # the bot's own title and body replaced the other's
    assert "Upstream change 1" in pull["body"]
    assert env.sandbox.violations == []


async def test_a_command_it_cannot_read_gets_one_reply_saying_why(env: Harness) -> None:
    seed(env, config=CONFIG)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    [pull] = bump_pulls(env)
    number = int(pull["number"])
    env.sandbox.set_permission(DOWNSTREAM, MAINTAINER, "write")

    env.sandbox.comment_as(DOWNSTREAM, number, MAINTAINER, "@bot retry-flaky --reason")
    await env.settle()
    delivery = next(d for d in reversed(env.sandbox.deliveries) if d.event == "issue_comment")
    await env.sandbox.deliver("issue_comment", delivery.payload)  # redelivered
    await env.settle()

    [body] = [b for b in bodies(env, number) if not b.startswith("@bot")]
    reason = "`--reason` needs a value: `--reason TEXT`. Usage: `@bot retry-flaky"
    assert body.startswith(REPLY_ERROR.format(login=MAINTAINER, reason=reason)[:-1])


def bot(env: Harness) -> str:
    return env.sandbox.bot_user.login
