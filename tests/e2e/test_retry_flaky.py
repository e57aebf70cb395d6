"""`@bot retry-flaky` end to end: GitHub comment → Buildkite retries → sticky comment."""

from __future__ import annotations

from typing import Any

import aiohttp

from bot.buildkite.client import BuildkiteClient
from bot.buildkite.transport import BuildkiteConnection
from bot.github import neutralise
from bot.retry import text as retry_text
from sandbox.buildkite_state import JobSpec
from sandbox.harness import BUILDKITE_TOKEN, Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIPELINE
from tests.e2e.conftest import seed

REPO_URL = f"https://github.com/{DOWNSTREAM}.git"
RETRY_CONFIG = (
    CONFIG
    + f"""\
buildkite:
  organization: vllm
  pipelines: [{PIPELINE}]
retry:
  flaky_rules:
    - name: spec-decode-timeout
      step: spec-decode
      log: "test_spec_decode_e2e.* - TimeoutError"
"""
)
MAINTAINER, CONTRIBUTOR, STRANGER = "maintainer", "contributor", "stranger"


def log(*lines: str) -> bytes:
    body = [
        "~~~ Running tests",
        "$ pytest -v tests",
        *lines,
        "🚨 Error: The command exited with status 1",
    ]
    return "".join(
        f"\x1b_bk;t={1_754_000_000_000 + i}\x07{line}\r\n" for i, line in enumerate(body)
    ).encode()


def pytest_failure(test_id: str, error: str) -> bytes:
    return log(
        "=========================== short test summary info ============================",
        f"FAILED {test_id} - {error}",
        "==================== 1 failed, 41 passed in 612.34s (0:10:12) ====================",
    )


INFRA = JobSpec("gpu-a", "GPU test A", state="failed", exit_status=-1, log=b"")
KNOWN = JobSpec(
    "spec-decode",
    "Spec decode",
    state="failed",
    exit_status=1,
    log=pytest_failure(
        "tests/spec_decode/test_spec_decode_e2e.py::test_e2e[7]", "TimeoutError: 600s"
    ),
)
BROKEN = JobSpec(
    "kernels",
    "Kernels MoE",
    state="failed",
    exit_status=1,
    log=pytest_failure("tests/kernels/test_moe.py::test_fused_moe[64]", "AssertionError: mismatch"),
)
HISTORY = JobSpec(
    "distributed",
    "Distributed PP",
    state="failed",
    exit_status=1,
    log=pytest_failure(
        "tests/distributed/test_pp.py::test_pp_cudagraph", "RuntimeError: NCCL error"
    ),
)
NEW = JobSpec(
    "models",
    "Models Llama",
    state="failed",
    exit_status=1,
    log=pytest_failure(
        "tests/models/test_llama.py::test_generate", "AssertionError: tokens differ"
    ),
)
PASSING = JobSpec("lint", "Lint")


def seed_pr(env: Harness, *, labels: tuple[str, ...] = ()) -> tuple[int, str]:
    seed(env, config=RETRY_CONFIG)
    env.ci.add_pipeline(PIPELINE, repository=REPO_URL)
    for login, level in ((MAINTAINER, "maintain"), (STRANGER, "read")):
        env.sandbox.set_permission(DOWNSTREAM, login, level)
    head = env.sandbox.commit(
        DOWNSTREAM, {"vllm/model.py": "x = 1\n"}, "Add a model", branch="feature"
    )
    pull = env.sandbox.open_pull(
        DOWNSTREAM, head="feature", title="Add a model", by=CONTRIBUTOR, labels=labels
    )
    return int(pull["number"]), head


def pr_build(env: Harness, number: int, head: str, *jobs: JobSpec) -> int:
    pull_request = {"id": str(number), "base": "main", "repository": REPO_URL}
    build = env.ci.create_build(
        PIPELINE, commit=head, branch="feature", jobs=list(jobs), pull_request=pull_request
    )
    return int(build["number"])


def main_build(env: Harness, *jobs: JobSpec, commit: str | None = None) -> dict[str, Any]:
    return env.ci.create_build(
        PIPELINE, commit=commit or env.sandbox.head(DOWNSTREAM), branch="main", jobs=list(jobs)
    )


async def ask(env: Harness, number: int, login: str, body: str = "@bot retry-flaky") -> None:
    env.sandbox.comment_as(DOWNSTREAM, number, login, body)
    await env.settle()


def sticky(env: Harness, number: int) -> str:
    bodies = [
        c["body"]
        for c in env.sandbox.comments(DOWNSTREAM, number)
        if retry_text.MARKER_STICKY in c["body"]
    ]
    assert len(bodies) == 1, bodies
    return str(bodies[0])


def row(body: str, name: str) -> str:
    """The newest row of job ``name`` (the sticky keeps earlier retries of a step above)."""
    return [line for line in body.splitlines() if line.startswith(f"| [{name}]")][-1]


def retried(env: Harness) -> list[str]:
    return [r.path for r in env.ci.requests if r.method == "PUT"]


async def test_each_class_is_decided_with_evidence(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    # main: kernels fails the same way (broken trunk); distributed passes now but
    # failed this way on an older commit and passed on retry (flaky by history)
    older = main_build(env, HISTORY, PASSING, commit="0" * 40)
    [dist] = [
        j for j in env.ci.build(PIPELINE, older["number"])["jobs"] if j["step_key"] == "distributed"
    ]
    env.ci.set_retry_outcome(dist["id"], state="passed")
    async with aiohttp.ClientSession() as session:
        connection = BuildkiteConnection(api_url=env.ci.base_url, token=BUILDKITE_TOKEN)
        await BuildkiteClient(session, connection).retry_job(
            "vllm", PIPELINE, int(older["number"]), dist["id"]
        )
    main_build(env, BROKEN, JobSpec("distributed", "Distributed PP"), PASSING)
    pr_build(env, number, head, INFRA, KNOWN, BROKEN, HISTORY, NEW, PASSING)
    await env.start()
    env.ci.reset_log()

    await ask(env, number, MAINTAINER, "@bot retry-flaky --reason 'runner looked sick'")

    body = sticky(env, number)
    assert "| infra |" in row(body, "GPU test A")
    assert "exit status -1" in row(body, "GPU test A")
    assert "| known-flaky |" in row(body, "Spec decode")
    assert "spec-decode-timeout" in row(body, "Spec decode")
    assert "| broken-trunk |" in row(body, "Kernels MoE")
    assert "not retried" in row(body, "Kernels MoE")
    assert "| flaky-by-history |" in row(body, "Distributed PP")
    assert "| new-failure |" in row(body, "Models Llama")
    assert "not retried" in row(body, "Models Llama")
    assert "reason: runner looked sick" in body
    assert len(retried(env)) == 3  # infra, known flaky, flaky by history
    assert all("/jobs/" in path and path.endswith("/retry") for path in retried(env))
    assert not any(r.route == "builds.retry_failed_jobs" for r in env.ci.requests)
    failed_jobs = 5
    assert len(env.ci.requests) <= 3 + 2 * failed_jobs + 3  # + main logs for history


async def test_outcomes_of_retried_jobs_update_the_comment(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    build = pr_build(env, number, head, INFRA, PASSING)
    env.ci.set_retry_outcome("gpu-a", state="passed")
    await env.start()
    await ask(env, number, MAINTAINER)
    assert retry_text.OUTCOME_PASSED in row(sticky(env, number), "GPU test A")
    assert build == 1


async def test_too_many_failures_retry_nothing(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    jobs = [JobSpec(f"gpu-{i}", f"GPU {i}", state="failed", exit_status=-1) for i in range(9)]
    pr_build(env, number, head, *jobs)
    await env.start()
    await ask(env, number, MAINTAINER)

    assert retried(env) == []
    assert "**9 jobs failed**" in sticky(env, number)
    assert "/ci retry" in sticky(env, number)


async def test_at_most_two_bot_retries_of_a_step_per_build(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA)
    env.ci.set_retry_outcome("gpu-a", state="failed", exit_status=-1)
    await env.start()
    for _ in range(3):
        await ask(env, number, MAINTAINER)

    assert len(retried(env)) == 2
    body = sticky(env, number)
    assert "already retried this step 2 times" in row(body, "GPU test A")
    # the two retries that failed again are still shown, with their outcomes
    assert body.count(retry_text.OUTCOME_FAILED) == 2


async def test_permissions(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA)
    await env.start()

    await ask(env, number, STRANGER)
    await ask(env, number, CONTRIBUTOR)  # the author, but the PR is not `ready`
    assert retried(env) == []
    replies = [
        c["body"] for c in env.sandbox.comments(DOWNSTREAM, number) if "I did not run" in c["body"]
    ]
    assert len(replies) == 2
    command = neutralise.code("@bot retry-flaky")
    assert replies[0].startswith(f"@{STRANGER} I did not run {command}")


async def test_the_author_may_ask_once_the_pr_is_ready(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env, labels=("ready",))
    pr_build(env, number, head, INFRA)
    await env.start()
    await ask(env, number, CONTRIBUTOR)
    assert len(retried(env)) == 1


async def test_repeated_command_updates_the_same_comment_without_double_retry(
    ci_env: Harness,
) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    await env.start()
    await ask(env, number, MAINTAINER)
    first = sticky(env, number)
    await ask(env, number, MAINTAINER)

    assert len(retried(env)) == 1
    sticky(env, number)  # still exactly one sticky comment
    assert first.count("| infra |") == 1


async def test_redelivered_comment_webhook_does_nothing_new(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA)
    await env.start()
    await ask(env, number, MAINTAINER)
    delivery = next(d for d in reversed(env.sandbox.deliveries) if d.event == "issue_comment")
    comments = len(env.sandbox.comments(DOWNSTREAM, number))

    await env.sandbox.deliver("issue_comment", delivery.payload, delivery_id=delivery.delivery_id)
    await env.sandbox.deliver("issue_comment", delivery.payload)  # a new id, same comment
    await env.settle()

    assert len(retried(env)) == 1
    assert len(env.sandbox.comments(DOWNSTREAM, number)) == comments


async def test_head_push_during_the_command_retries_nothing(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA)
    await env.start()
    pushed: list[str] = []

    async def push_once(method: str, path: str) -> None:
        if path.endswith("/log") and not pushed:
            pushed.append(env.sandbox.commit(DOWNSTREAM, {"b": "2\n"}, "more", branch="feature"))

    env.ci.on_request = push_once
    await ask(env, number, MAINTAINER)

    assert retried(env) == []
    [reply] = [
        c["body"] for c in env.sandbox.comments(DOWNSTREAM, number) if "head moved" in c["body"]
    ]
    assert f"`{pushed[0][:7]}`" in reply


async def test_no_build_for_the_head_is_refused(ci_env: Harness) -> None:
    env = ci_env
    number, _head = seed_pr(env)
    await env.start()
    await ask(env, number, MAINTAINER)
    [reply] = [
        c["body"] for c in env.sandbox.comments(DOWNSTREAM, number) if "I did not run" in c["body"]
    ]
    assert "no Buildkite build of this PR's head commit" in reply


async def test_buildkite_429_is_waited_out(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA)
    await env.start()
    env.ci.faults.rate_limit_next(2)
    await ask(env, number, MAINTAINER)

    assert len(retried(env)) == 1
    assert len(env.waits) == 2
    assert [r.status for r in env.ci.requests[:3]] == [429, 429, 200]


async def test_force_retries_one_named_job_with_a_reason(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, NEW, PASSING)
    await env.start()
    await ask(env, number, STRANGER, "@bot retry-flaky models --force --reason 'flaky'")
    assert retried(env) == []
    await ask(env, number, MAINTAINER, "@bot retry-flaky models --force")
    assert retried(env) == []
    await ask(env, number, MAINTAINER, "@bot retry-flaky models --force --reason 'known HF outage'")
    assert len(retried(env)) == 1
    assert "retried by force (known HF outage)" in row(sticky(env, number), "Models Llama")


async def test_help_and_unknown_commands_get_the_help_text(ci_env: Harness) -> None:
    env = ci_env
    number, _head = seed_pr(env)
    await env.start()
    await ask(env, number, STRANGER, "@bot frobnicate")
    [reply] = [
        c["body"] for c in env.sandbox.comments(DOWNSTREAM, number) if c["user"]["type"] == "Bot"
    ]
    assert "retry-flaky" in reply
    reactions = [
        r for r in env.sandbox.requests if r.operation_id == "reactions/create-for-issue-comment"
    ]
    assert len(reactions) == 1


async def test_the_newest_pr_build_of_each_configured_pipeline_is_covered(
    ci_env: Harness,
) -> None:
    env = ci_env
    seed(
        env,
        config=RETRY_CONFIG.replace(f"pipelines: [{PIPELINE}]", f"pipelines: [{PIPELINE}, amd]"),
    )
    env.ci.add_pipeline(PIPELINE, repository=REPO_URL)
    env.ci.add_pipeline("amd", repository=REPO_URL)
    env.sandbox.set_permission(DOWNSTREAM, MAINTAINER, "maintain")
    head = env.sandbox.commit(
        DOWNSTREAM, {"vllm/model.py": "x = 1\n"}, "Add a model", branch="feature"
    )
    number = int(
        env.sandbox.open_pull(DOWNSTREAM, head="feature", title="t", by=CONTRIBUTOR)["number"]
    )
    pull_request = {"id": str(number), "base": "main", "repository": REPO_URL}
    env.ci.create_build(
        PIPELINE, commit=head, branch="feature", jobs=[INFRA], pull_request=pull_request
    )
    amd_job = JobSpec("rocm-a", "ROCm test A", state="failed", exit_status=-1, log=b"")
    env.ci.create_build(
        "amd", commit=head, branch="feature", jobs=[amd_job], pull_request=pull_request
    )
    await env.start()

    await ask(env, number, MAINTAINER)

    assert len(retried(env)) == 2
    body = sticky(env, number)
    assert f"[{PIPELINE} #1]" in body
    assert "[amd #1]" in body
    assert "| infra |" in row(body, "ROCm test A")


async def test_a_second_command_keeps_the_row_of_a_retry_still_running(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    pr_build(env, number, head, INFRA, NEW)
    env.ci.set_retry_outcome("gpu-a", state="failed", exit_status=1, after="on_demand")
    await env.start()
    await ask(env, number, MAINTAINER)
    assert retry_text.OUTCOME_RUNNING in row(sticky(env, number), "GPU test A")

    await ask(env, number, MAINTAINER)  # while the bot's retry still runs
    assert retry_text.OUTCOME_RUNNING in row(sticky(env, number), "GPU test A")
    assert "| new-failure |" in row(sticky(env, number), "Models Llama")

    [retry] = [r.path for r in env.ci.requests if r.method == "PUT"]
    new_job = next(
        j["id"]
        for j in env.ci.build(PIPELINE, 1)["jobs"]
        if j["step_key"] == "gpu-a" and not j.get("retried")
    )
    await env.ci.complete_job(str(new_job))
    await env.settle()
    assert retry_text.OUTCOME_FAILED in row(sticky(env, number), "GPU test A")
    assert retry.endswith("/retry")
