"""Jobs that never ran are not failures: retry-flaky and landing end to end."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bot.failures.classify import EVIDENCE_EXPIRED
from bot.retry import text as retry_text
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIPELINE
from tests.e2e.test_landing import (
    BRANCH,
    BUILDKITE,
    LANDING,
    PASSING,
    REAL,
    REPO_URL,
    approve,
    bodies,
    current,
    merges,
    open_bump,
)
from tests.e2e.test_retry_flaky import (
    INFRA,
    MAINTAINER,
    NEW,
    ask,
    pr_build,
    retried,
    row,
    seed_pr,
    sticky,
)

# Buildkite's never-ran jobs: a step whose dependency failed or whose `if:` was false
# (broken), one skipped, one canceled before an agent took it, jobs held behind a wait
# or block step when the build failed. None has a log or an exit status.
BROKEN = JobSpec("gpu-b", "GPU test B", state="broken", exit_status=None)
SKIPPED = JobSpec("docs", "Docs build", state="skipped", exit_status=None)
CANCELED_EARLY = JobSpec("tpu", "TPU test", state="canceled", exit_status=None)
WAITING_FAILED = JobSpec("bench", "Benchmarks", state="waiting_failed", exit_status=None)
BLOCKED_FAILED = JobSpec("release", "Release wheel", state="blocked_failed", exit_status=None)


def rows(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.startswith("| [")]


def nine_broken() -> list[JobSpec]:
    return [JobSpec(f"dep-{i}", f"Dependent {i}", state="broken") for i in range(9)]


def nine_of_every_kind() -> list[JobSpec]:
    kinds = [BROKEN, SKIPPED, CANCELED_EARLY, WAITING_FAILED, BLOCKED_FAILED] * 2
    return [
        JobSpec(f"{spec.step_key}-{i}", f"{spec.name} {i}", state=spec.state, exit_status=None)
        for i, spec in enumerate(kinds[:9])
    ]


async def test_retry_flaky_lists_only_the_failure_that_ran(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, NEW, BROKEN, SKIPPED, CANCELED_EARLY, PASSING)
    await env.start()

    await ask(env, number, MAINTAINER)

    body = sticky(env, number)
    assert len(rows(body)) == 1
    assert "| new-failure |" in row(body, "Models Llama")
    for name in ("GPU test B", "Docs build", "TPU test"):
        assert f"[{name}]" not in body
    assert retried(env) == []


@pytest.mark.parametrize("never_ran", [nine_broken(), nine_of_every_kind()])
async def test_jobs_that_never_ran_do_not_count_toward_the_cap(
    ci_env: Harness, never_ran: list[JobSpec]
) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, *never_ran, INFRA)
    await env.start()

    await ask(env, number, MAINTAINER)

    body = sticky(env, number)
    assert retry_text.TOO_MANY_FAILED.split("{limit}")[1] not in body  # no cap note
    assert len(rows(body)) == 1
    assert "| infra |" in row(body, "GPU test A")
    [path] = retried(env)
    assert path.endswith("/retry")


async def test_an_expired_job_is_still_an_infra_failure_among_jobs_that_never_ran(
    ci_env: Harness,
) -> None:
    env = ci_env
    number, head = seed_pr(env)
    expired = JobSpec("gpu-x", "GPU test X", state="expired", exit_status=None)
    pr_build(env, number, head, expired, BROKEN, SKIPPED)
    await env.start()

    await ask(env, number, MAINTAINER)

    body = sticky(env, number)
    assert len(rows(body)) == 1
    assert EVIDENCE_EXPIRED in row(body, "GPU test X")
    assert len(retried(env)) == 1


def failed_build(env: Harness, pull: dict[str, Any], *jobs: JobSpec, pipeline: str) -> int:
    """A build of the PR's head that Buildkite shows as failed, whatever its jobs say."""
    head = current(env, int(pull["number"]))["head"]["sha"]
    build = env.ci.create_build(
        pipeline,
        commit=head,
        branch=BRANCH,
        jobs=list(jobs),
        pull_request={"id": str(pull["number"]), "base": "main", "repository": REPO_URL},
        state="failed",
    )
    return int(build["number"])


async def test_landing_waits_on_a_build_failed_only_by_jobs_that_never_ran(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)

    # e.g. the job `gpu-b` depends on failed and was retried, and passed: the build
    # still shows failed, with `gpu-b` broken
    build = failed_build(env, pull, PASSING, BROKEN, pipeline=PIPELINE)
    await env.ci.finish_build(PIPELINE, build)
    await env.settle()

    assert bodies(env, number) == []  # not left to humans
    assert not any(r.method == "PUT" for r in env.ci.requests)  # nothing retried
    assert merges(env) == []  # and not green either
    assert current(env, number)["merged"] is False

    # the approval still stands: a rebuild that passes lands the PR
    rebuilt = env.ci.create_build(
        PIPELINE,
        commit=current(env, number)["head"]["sha"],
        branch=BRANCH,
        jobs=[PASSING, JobSpec("gpu-b", "GPU test B")],
        pull_request={"id": str(number), "base": "main", "repository": REPO_URL},
    )
    await env.ci.finish_build(PIPELINE, int(rebuilt["number"]))
    await env.settle()
    assert current(env, number)["merged"] is True
    assert bodies(env, number) == []


async def test_a_build_failed_by_jobs_that_never_ran_hides_no_other_failure(
    ci_env: Harness,
) -> None:
    env = ci_env
    two = f"buildkite: {{organization: vllm, pipelines: [{PIPELINE}, amd]}}\n"
    env.ci.add_pipeline("amd", repository=REPO_URL)
    pull = await open_bump(env, config=CONFIG + LANDING + two)
    number = int(pull["number"])
    # The full CI's labels were on the PR before these builds: they count for landing.
    for name in ("ready", "ci-full"):
        env.sandbox.label_pull(DOWNSTREAM, number, name, by=MAINTAINER, at=time.time() - 60)
    failed_build(env, pull, PASSING, BROKEN, pipeline=PIPELINE)
    failed_build(env, pull, REAL, pipeline="amd")

    await approve(env, pull, MAINTAINER)  # both failed before: acted on now

    [body] = bodies(env, number)
    assert "Leaving this PR to humans" in body
    assert "[Models Llama]" in body
    assert "[GPU test B]" not in body
    assert merges(env) == []
