"""A job someone canceled while it ran is no failure: retry-flaky, landing and main-red
end to end through the stand-ins.

Buildkite does not fail a build for a canceled job; a person (or Buildkite on their
behalf: `cancel_on_build_failing`, a newer build) stopped it. So it is shown as canceled,
with when (Buildkite's REST API does not say who), never counted toward the cap, never
retried, never a "new failure", and never a red run of its step on main.
"""

from __future__ import annotations

from bot.failures.classify import EVIDENCE_CANCELED, cancel_time
from bot.landing import text as landing_text
from bot.retry import text as retry_text
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIPELINE
from tests.e2e.test_job_states import CANCELED_EARLY, failed_build, rows
from tests.e2e.test_landing import (
    BRANCH,
    BUILDKITE,
    LANDING,
    LOST_AGENT,
    PASSING,
    REAL,
    REPO_URL,
    approve,
    bodies,
    current,
    finished_build,
    merges,
    open_bump,
)
from tests.e2e.test_main_red import (
    AUDIT_FAILURE,
    audit,
    follow_up_writes,
    incident_a,
    issues,
    revert_pulls,
)
from tests.e2e.test_retry_flaky import (
    INFRA,
    MAINTAINER,
    NEW,
    ask,
    log,
    pr_build,
    retried,
    row,
    seed_pr,
    sticky,
)

# Canceled mid-test: the log stops where the cancel caught it, after a line that looks
# like a real failure (which is why "new failure" was so wrong).
CANCELED_LOG = log(
    "FAILED tests/models/test_gemma.py::test_generate - AssertionError: tokens differ",
    "# Received cancellation signal, interrupting",
)


def canceled(step: str, name: str) -> JobSpec:
    """A job canceled while it ran, as Buildkite shows it: it started, then stopped."""
    return JobSpec(
        step,
        name,
        state="canceled",
        exit_status=-1,
        signal_reason="cancel",
        log=CANCELED_LOG,
        started=True,
    )


GEMMA = canceled("models-gemma", "Models Gemma")
NOT_RETRIED = retry_text.ACTION_NOT_RETRIED.format(why=retry_text.WHY["canceled"])


def canceled_at(env: Harness, number: int, name: str) -> str:
    """The evidence the bot must show for job ``name``: when the stand-in stopped it."""
    [job] = [j for j in env.ci.build(PIPELINE, number)["jobs"] if j["name"] == name]
    when = cancel_time(job["finished_at"])
    assert when is not None
    return EVIDENCE_CANCELED.format(when=when)


def canceled_rows(body: str) -> list[str]:
    return [line for line in rows(body) if "| canceled |" in line]


# --- retry-flaky ---------------------------------------------------------------------


async def test_retry_flaky_lists_a_canceled_job_apart_and_never_retries_it(
    ci_env: Harness,
) -> None:
    env = ci_env
    number, head = seed_pr(env)
    build = pr_build(env, number, head, NEW, INFRA, GEMMA, CANCELED_EARLY, PASSING)
    await env.start()

    await ask(env, number, MAINTAINER)

    body = sticky(env, number)
    assert "| new-failure |" in row(body, "Models Llama")
    assert "| infra |" in row(body, "GPU test A")
    gemma = row(body, "Models Gemma")
    assert f"| canceled | {canceled_at(env, build, 'Models Gemma')} | {NOT_RETRIED} |" in gemma
    assert "new-failure" not in gemma
    assert "[TPU test]" not in body  # canceled before it started: it never ran
    assert len(rows(body)) == 3
    [path] = retried(env)  # the infra job alone
    [gemma_job] = [
        j for j in env.ci.build(PIPELINE, build)["jobs"] if j["step_key"] == GEMMA.step_key
    ]
    assert gemma_job["id"] not in path


async def test_canceled_jobs_do_not_count_toward_the_cap(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    nine = [canceled(f"shard-{i}", f"Shard {i}") for i in range(9)]  # more than the 8 allowed
    pr_build(env, number, head, *nine, INFRA)
    await env.start()

    await ask(env, number, MAINTAINER)

    body = sticky(env, number)
    assert retry_text.TOO_MANY_FAILED.split("{limit}")[1] not in body  # no cap note
    assert "| infra |" in row(body, "GPU test A")
    assert len(canceled_rows(body)) == 9
    assert len(retried(env)) == 1


async def test_a_build_with_only_canceled_jobs_retries_nothing(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    build = pr_build(env, number, head, GEMMA, PASSING)
    await env.start()

    await ask(env, number, MAINTAINER)

    body = sticky(env, number)
    assert canceled_rows(body) == [row(body, "Models Gemma")]
    assert canceled_at(env, build, "Models Gemma") in body
    assert retried(env) == []


# --- landing ---------------------------------------------------------------------------


async def test_landing_retries_the_flaky_job_and_never_the_canceled_one(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    env.ci.set_retry_outcome("gpu-a", state="passed")
    await approve(env, pull, MAINTAINER)

    # GPU test A lost its agent; Models Gemma was canceled while it ran (e.g. by
    # `cancel_on_build_failing`): a flaky failure, and no real one.
    await finished_build(env, pull, LOST_AGENT, GEMMA, PASSING)

    [path] = [r.path for r in env.ci.requests if r.method == "PUT"]
    assert path.endswith("/retry")
    records = await env.running.services.store.list_state("retry-job")
    assert [doc["name"] for _key, doc in records] == ["GPU test A"]
    assert bodies(env, number) == []  # not "a real failure", not left to humans
    # Not green either: the canceled job did not run to its end. The approval stands,
    # and a rebuild that passes lands the PR.
    assert merges(env) == []
    await finished_build(env, pull, PASSING, JobSpec(GEMMA.step_key, GEMMA.name))
    assert current(env, number)["merged"] is True
    assert bodies(env, number) == []


async def test_a_real_failure_beside_a_canceled_job_names_only_the_failure(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)

    await finished_build(env, pull, REAL, GEMMA, PASSING)

    [body] = bodies(env, number)
    assert "Leaving this PR to humans" in body
    failures, canceled_part = body.split(landing_text.CANCELED_JOBS.split("{rows}")[0])
    assert "[Models Llama]" in failures
    assert "[Models Gemma]" not in failures  # a canceled job is no failure of the build
    assert "[Models Gemma]" in canceled_part  # listed apart, as canceled
    assert not any(r.method == "PUT" for r in env.ci.requests)
    assert merges(env) == []


async def test_too_many_failures_counts_no_canceled_job(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    env.ci.set_retry_outcome("gpu-a", state="passed")
    await approve(env, pull, MAINTAINER)

    nine = [canceled(f"shard-{i}", f"Shard {i}") for i in range(9)]
    await finished_build(env, pull, LOST_AGENT, *nine)

    too_many = landing_text.TOO_MANY_FAILED.split("{count}")[1].split("{build}")[0]
    assert not any(too_many in body for body in bodies(env, number))
    assert len([r for r in env.ci.requests if r.method == "PUT"]) == 1  # GPU test A


async def test_landing_waits_on_a_failed_build_whose_only_trouble_is_a_canceled_job(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)

    # Buildkite shows this build failed; none of its jobs failed by itself.
    build = failed_build(env, pull, PASSING, GEMMA, pipeline=PIPELINE)
    await env.ci.finish_build(PIPELINE, build)
    await env.settle()

    assert bodies(env, number) == []  # not a real failure: not left to humans
    assert not any(r.method == "PUT" for r in env.ci.requests)  # nothing retried
    assert merges(env) == []  # not green either

    rebuilt = env.ci.create_build(
        PIPELINE,
        commit=current(env, number)["head"]["sha"],
        branch=BRANCH,
        jobs=[PASSING, JobSpec(GEMMA.step_key, GEMMA.name)],
        pull_request={"id": str(number), "base": "main", "repository": REPO_URL},
    )
    await env.ci.finish_build(PIPELINE, int(rebuilt["number"]))
    await env.settle()
    assert current(env, number)["merged"] is True


# --- main-red --------------------------------------------------------------------------


def canceled_audit() -> JobSpec:
    return audit(
        "canceled",
        *AUDIT_FAILURE,
        "# Received cancellation signal, interrupting",
        exit_status=-1,
        signal_reason="cancel",
        started=True,
    )


async def failed_main_build(w: World, jobs: list[JobSpec]) -> None:
    """A main build Buildkite shows as failed (another job lost its agent and the build
    canceled the rest), its webhooks delivered."""
    build = w.ci.create_build(PIPELINE, commit=w.github.head(DOWNSTREAM), branch="main", jobs=jobs)
    await w.ci.finish_build(PIPELINE, int(build["number"]))
    await w.settle()


async def test_a_step_canceled_twice_on_main_is_no_red_signal(ci_env: Harness) -> None:
    w, _pr, _culprit = await incident_a(ci_env)
    writes = len(follow_up_writes(ci_env))
    lost = World.job("misc-1", state="failed", log=["Killed"], exit_status=-1)
    for _ in range(2):
        # The audit's log even ends like its real failure: the cancel still says nothing.
        await failed_main_build(w, [canceled_audit(), lost, World.job("cpu-full", log=["ok"])])

    assert issues(ci_env) == []
    assert revert_pulls(ci_env) == []
    assert len(follow_up_writes(ci_env)) == writes


async def test_a_blocked_build_with_a_canceled_job_does_not_land(ci_env: Harness) -> None:
    # "Every job that ran passed" is what lets a blocked build land: a canceled job ran
    # and did not pass.
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)

    blocked = JobSpec("benchmarks", "Benchmarks (optional)", state="blocked")
    build = await finished_build(env, pull, PASSING, GEMMA, blocked)

    assert env.ci.build(PIPELINE, build)["state"] == "blocked"
    assert merges(env) == []
    assert current(env, number)["merged"] is False
