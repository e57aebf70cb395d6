"""Landing approved bumps end to end: review → label → auto-merge or merge → cooldown."""

from __future__ import annotations

from typing import Any

from bot.landing import text as landing_text
from bot.pins import text as bump_text
from bot.pins.state import Outcome
from bot.service.reconcile import enqueue_tick
from bot.store.kinds import Kind, pin_key
from sandbox.buildkite_state import JobSpec
from sandbox.github_state import Label
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIPELINE, UPSTREAM
from tests.e2e.conftest import seed

PIN = "flash-attention"
BRANCH = bump_text.bump_branch(PIN)
REPO_URL = f"https://github.com/{DOWNSTREAM}.git"
CI = "buildkite/ci"
MAINTAINER, READER = "maintainer", "reader"
LANDING = "landing: {labels_on_approval: [ready, ci-full]}\n"
BUILDKITE = f"buildkite: {{organization: vllm, pipelines: [{PIPELINE}]}}\n"

PASSING = JobSpec("lint", "Lint")
LOST_AGENT = JobSpec("gpu-a", "GPU test A", state="failed", exit_status=-1, log=b"")
REAL = JobSpec(
    "models",
    "Models Llama",
    state="failed",
    exit_status=1,
    log=(
        b"FAILED tests/models/test_llama.py::test_generate - AssertionError: tokens differ\r\n"
        b"==================== 1 failed, 41 passed in 612.34s ====================\r\n"
    ),
)


def seed_landing(env: Harness, *, config: str, auto_merge: bool = False) -> None:
    """A downstream ready for landing: labels, a maintainer and a reader, the pipeline."""
    seed(env, config=config)
    repo = env.sandbox.repo(DOWNSTREAM)
    repo.allow_auto_merge = auto_merge
    # The labels exist with descriptions, as vLLM's do. (A label the add-labels call
    # creates has none, which the stand-in's pulls/list contract check rejects.)
    for name in ("ready", "ci-full"):
        repo.labels[name] = Label(env.sandbox.ids(), name, description=f"{name} label")
    env.sandbox.set_permission(DOWNSTREAM, MAINTAINER, "maintain")
    env.sandbox.set_permission(DOWNSTREAM, READER, "read")
    if env.buildkite is not None:
        env.ci.add_pipeline(PIPELINE, repository=REPO_URL)


async def open_bump(
    env: Harness, *, config: str = CONFIG + LANDING, auto_merge: bool = False
) -> dict[str, Any]:
    """The bot's bump PR for one upstream merge; a maintainer and a reader exist."""
    seed_landing(env, config=config, auto_merge=auto_merge)
    await env.start()
    await env.sandbox.push_commit(UPSTREAM, {"csrc/a.cu": "// a\n"}, "Upstream change (#171)")
    await env.settle()
    [pull] = [p for p in env.sandbox.pulls(DOWNSTREAM) if p["head"]["ref"] == BRANCH]
    return pull


async def approve(env: Harness, pull: dict[str, Any], login: str, **kw: Any) -> dict[str, Any]:
    review = env.sandbox.submit_review(DOWNSTREAM, int(pull["number"]), login, **kw)
    await env.settle()
    return review


def current(env: Harness, number: int) -> dict[str, Any]:
    return next(p for p in env.sandbox.pulls(DOWNSTREAM) if p["number"] == number)


def labels(env: Harness, number: int) -> list[str]:
    return sorted(label["name"] for label in current(env, number)["labels"])


def bodies(env: Harness, number: int) -> list[str]:
    return [str(c["body"]) for c in env.sandbox.comments(DOWNSTREAM, number)]


def merges(env: Harness) -> list[int]:
    return [r.status for r in env.sandbox.requests if r.operation_id == "pulls/merge"]


def graphql_calls(env: Harness) -> int:
    return sum(1 for r in env.sandbox.requests if r.operation_id == "graphql")


async def finished_build(env: Harness, pull: dict[str, Any], *jobs: JobSpec) -> int:
    head = current(env, int(pull["number"]))["head"]["sha"]
    build = env.ci.create_build(
        PIPELINE,
        commit=head,
        branch=BRANCH,
        jobs=list(jobs),
        pull_request={"id": str(pull["number"]), "base": "main", "repository": REPO_URL},
    )
    await env.ci.finish_build(PIPELINE, int(build["number"]))
    await env.settle()
    return int(build["number"])


async def landed_at(env: Harness) -> Any:
    doc = await env.running.services.store.get_state(Kind.PIN_COOLDOWN, pin_key(DOWNSTREAM, PIN))
    return None if doc is None else doc.get("landed_at")


async def test_writer_approval_labels_enables_auto_merge_and_lands_when_green(
    env: Harness,
) -> None:
    pull = await open_bump(env, auto_merge=True)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    env.sandbox.require_checks(DOWNSTREAM, "main", [CI])
    env.sandbox.set_status(DOWNSTREAM, head, "pending", context=CI)
    await env.settle()

    await approve(env, pull, MAINTAINER)

    assert labels(env, number) == ["ci-full", "ready"]
    assert current(env, number)["auto_merge"] is not None
    assert current(env, number)["state"] == "open"
    assert bodies(env, number) == []

    # a redelivered approval and more statuses neither re-label nor re-enable
    env.sandbox.reset_log()
    await approve(env, pull, MAINTAINER)
    assert graphql_calls(env) == 0
    assert not any(r.operation_id == "issues/add-labels" for r in env.sandbox.requests)

    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()
    assert current(env, number)["merged"] is True
    assert await landed_at(env) is not None
    assert env.sandbox.violations == []


async def test_approval_by_a_reader_only_gets_a_comment(env: Harness) -> None:
    pull = await open_bump(env, auto_merge=True)
    number = int(pull["number"])
    env.sandbox.reset_log()

    review = await approve(env, pull, READER)
    # the same review delivered again is not answered twice
    delivery = next(d for d in reversed(env.sandbox.deliveries) if d.event == "pull_request_review")
    await env.sandbox.deliver("pull_request_review", delivery.payload)
    await env.settle()

    [body] = bodies(env, number)
    assert landing_text.WHY_PERMISSION in body
    assert landing_text.MARKER_REFUSED.format(review=review["id"]) in body
    assert labels(env, number) == []
    assert graphql_calls(env) == 0
    assert merges(env) == []


async def test_code_owner_may_approve_when_configured(env: Harness) -> None:
    config = CONFIG + "landing: {codeowners: true}\n"
    pull = await open_bump(env, config=config)
    env.sandbox.commit(DOWNSTREAM, {".github/CODEOWNERS": "/cmake/ @reader\n"}, "Owners")
    number = int(pull["number"])

    await approve(env, pull, READER)

    assert labels(env, number) == ["ready"]
    assert current(env, number)["merged"] is True  # no statuses, no Buildkite: green
    assert bodies(env, number) == []


async def test_code_owner_of_only_some_paths_is_refused(env: Harness) -> None:
    config = CONFIG + "landing: {codeowners: true}\n"
    pull = await open_bump(env, config=config)
    env.sandbox.commit(DOWNSTREAM, {"CODEOWNERS": "/cmake/ @someone-else\n"}, "Owners")
    number = int(pull["number"])

    await approve(env, pull, READER)

    [body] = bodies(env, number)
    assert "you do not own `cmake/external_projects/vllm_flash_attn.cmake`" in body
    assert current(env, number)["merged"] is False


async def test_approval_of_an_older_head_is_refused(env: Harness) -> None:
    pull = await open_bump(env)
    number, old = int(pull["number"]), str(pull["head"]["sha"])
    await env.sandbox.push_commit(UPSTREAM, {"csrc/b.cu": "// b\n"}, "Upstream change (#172)")
    await env.settle()
    head = current(env, number)["head"]["sha"]
    assert head != old

    await approve(env, pull, MAINTAINER, commit_id=old)

    [body] = bodies(env, number)
    assert landing_text.WHY_STALE.format(approved7=old[:7], head7=head[:7]) in body
    assert labels(env, number) == []
    assert merges(env) == []


async def test_a_pr_touching_other_paths_is_not_landed(env: Harness) -> None:
    config = CONFIG + 'landing: {paths: [".buildkite/**"]}\n'
    pull = await open_bump(env, config=config)
    number = int(pull["number"])

    await approve(env, pull, MAINTAINER)

    [body] = bodies(env, number)
    assert "`cmake/external_projects/vllm_flash_attn.cmake`, outside the paths" in body
    assert labels(env, number) == []
    assert merges(env) == []


async def test_without_auto_merge_it_merges_once_build_and_statuses_are_green(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    env.sandbox.require_checks(DOWNSTREAM, "main", [CI, "docs/readthedocs"])

    await approve(env, pull, MAINTAINER)
    assert labels(env, number) == ["ci-full", "ready"]
    assert merges(env) == []  # no build yet

    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()
    assert merges(env) == []  # the Buildkite build has not passed yet

    await finished_build(env, pull, PASSING)
    # statuses and build green, but a required check is still missing: GitHub says 405
    assert merges(env) == [405]
    assert current(env, number)["merged"] is False

    env.sandbox.set_status(DOWNSTREAM, head, "success", context="docs/readthedocs")
    await env.settle()
    assert merges(env) == [405, 200]
    merged = current(env, number)
    assert merged["merged"] is True
    assert await landed_at(env) is not None
    assert bodies(env, number) == []
    assert env.sandbox.violations == []


async def test_a_flaky_failure_is_retried_then_landed(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    env.ci.set_retry_outcome("gpu-a", state="passed")
    await approve(env, pull, MAINTAINER)

    await finished_build(env, pull, LOST_AGENT, PASSING)

    retries = [r.path for r in env.ci.requests if r.method == "PUT"]
    assert len(retries) == 1
    assert retries[0].endswith("/retry")
    assert current(env, number)["merged"] is True
    assert bodies(env, number) == []
    records = await env.running.services.store.list_state("retry-job")
    assert [doc["class"] for _key, doc in records] == ["infra"]
    assert records[0][1]["outcome"] == "passed"


async def test_a_flaky_failure_gets_three_attempts_then_is_left_to_humans(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    env.ci.set_retry_outcome("gpu-a", state="failed", exit_status=-1)
    await approve(env, pull, MAINTAINER)

    await finished_build(env, pull, LOST_AGENT, PASSING)

    retries = [r.path for r in env.ci.requests if r.method == "PUT"]
    assert len(retries) == 2  # attempts 2 and 3
    [body] = bodies(env, number)
    assert "failed 3 times" in body
    assert "[GPU test A]" in body
    assert current(env, number)["merged"] is False


async def test_a_real_failure_gets_one_comment_and_no_merge(ci_env: Harness) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)

    build = await finished_build(env, pull, REAL, LOST_AGENT, PASSING)
    # the same build finishing again (a redelivery under a new id) changes nothing
    await env.ci.emit("build.finished", PIPELINE, build)
    await env.settle()
    env.sandbox.set_status(DOWNSTREAM, current(env, number)["head"]["sha"], "success", context=CI)
    await env.settle()

    [body] = bodies(env, number)
    assert "Leaving this PR to humans" in body
    assert "[Models Llama]" in body
    assert "new-failure" in body
    assert "[GPU test A]" not in body  # only the failures a retry would not fix
    assert not any(r.method == "PUT" for r in env.ci.requests)  # nothing retried
    assert merges(env) == []


async def test_a_new_upstream_commit_after_approval_needs_re_approval(env: Harness) -> None:
    pull = await open_bump(env, auto_merge=True)
    number, old = int(pull["number"]), str(pull["head"]["sha"])
    env.sandbox.require_checks(DOWNSTREAM, "main", [CI])
    env.sandbox.set_status(DOWNSTREAM, old, "pending", context=CI)
    await approve(env, pull, MAINTAINER)
    assert current(env, number)["auto_merge"] is not None

    await env.sandbox.push_commit(UPSTREAM, {"csrc/b.cu": "// b\n"}, "Upstream change (#172)")
    await env.settle()
    head = current(env, number)["head"]["sha"]
    # the bump flow updating again, and a status of the new head, say nothing more
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()

    [body] = bodies(env, number)
    assert landing_text.REAPPROVAL_NEEDED.format(head7=head[:7], approved7=old[:7]) in body
    assert current(env, number)["auto_merge"] is None  # the bot turned it off
    assert current(env, number)["merged"] is False

    await approve(env, pull, MAINTAINER)  # re-approved at the new head: lands
    assert current(env, number)["merged"] is True


async def test_changes_requested_after_approval_stops_the_landing(env: Harness) -> None:
    pull = await open_bump(env, auto_merge=True)
    number, head = int(pull["number"]), str(pull["head"]["sha"])
    env.sandbox.require_checks(DOWNSTREAM, "main", [CI])
    env.sandbox.set_status(DOWNSTREAM, head, "pending", context=CI)
    await env.settle()
    await approve(env, pull, MAINTAINER)
    assert current(env, number)["auto_merge"] is not None

    await approve(env, pull, MAINTAINER, state="CHANGES_REQUESTED")

    assert current(env, number)["auto_merge"] is None
    [body] = bodies(env, number)
    assert body.startswith(f"Landing stopped: @{MAINTAINER} requested changes")
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()
    assert current(env, number)["merged"] is False


async def test_no_new_bump_of_a_pin_during_the_cooldown_after_landing(env: Harness) -> None:
    pull = await open_bump(env, auto_merge=True)
    head = str(pull["head"]["sha"])
    env.sandbox.require_checks(DOWNSTREAM, "main", [CI])
    env.sandbox.set_status(DOWNSTREAM, head, "pending", context=CI)
    await env.settle()
    await approve(env, pull, MAINTAINER)
    env.sandbox.set_status(DOWNSTREAM, head, "success", context=CI)
    await env.settle()
    assert current(env, int(pull["number"]))["merged"] is True

    await env.sandbox.push_commit(UPSTREAM, {"csrc/b.cu": "// b\n"}, "Next change (#172)")
    await env.settle()
    open_bumps = [
        p for p in env.sandbox.pulls(DOWNSTREAM, state="open") if p["head"]["ref"] == BRANCH
    ]
    assert open_bumps == []
    state = await env.running.services.store.get_state(Kind.BUMP, pin_key(DOWNSTREAM, PIN))
    assert state is not None
    assert state["last_result"] == Outcome.COOLDOWN

    # ten minutes later (the landing record says so), the next tick rolls again
    store = env.running.services.store
    doc = await store.get_state(Kind.PIN_COOLDOWN, pin_key(DOWNSTREAM, PIN))
    assert doc is not None
    await store.put_state(
        Kind.PIN_COOLDOWN, pin_key(DOWNSTREAM, PIN), {**doc, "landed_at": doc["landed_at"] - 601}
    )
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 5000.0, 300.0)
    await env.settle()
    assert (
        len([p for p in env.sandbox.pulls(DOWNSTREAM, state="open") if p["head"]["ref"] == BRANCH])
        == 1
    )


async def test_landing_waits_for_every_configured_pipeline(ci_env: Harness) -> None:
    env = ci_env
    two = f"buildkite: {{organization: vllm, pipelines: [{PIPELINE}, amd]}}\n"
    env.ci.add_pipeline("amd", repository=REPO_URL)
    pull = await open_bump(env, config=CONFIG + LANDING + two)
    number = int(pull["number"])
    head = str(pull["head"]["sha"])
    pull_request = {"id": str(number), "base": "main", "repository": REPO_URL}
    amd = env.ci.create_build(
        "amd",
        commit=head,
        branch=BRANCH,
        jobs=[PASSING],
        pull_request=pull_request,
        state="running",
    )
    await approve(env, pull, MAINTAINER)
    await finished_build(env, pull, PASSING)  # ci passed; amd still running
    assert merges(env) == []
    assert current(env, number)["merged"] is False

    env.ci.create_build(
        "amd", commit=head, branch=BRANCH, jobs=[PASSING], pull_request=pull_request
    )
    await env.ci.finish_build("amd", int(amd["number"]) + 1)
    await env.settle()
    assert merges(env) == [200]
    assert current(env, number)["merged"] is True


BLOCKED_STEP = JobSpec("benchmarks", "Benchmarks (optional)", state="blocked")


async def test_a_blocked_build_whose_jobs_passed_lands_and_names_the_blocked_steps(
    ci_env: Harness,
) -> None:
    env = ci_env
    pull = await open_bump(env, config=CONFIG + LANDING + BUILDKITE)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)

    build = await finished_build(env, pull, PASSING, BLOCKED_STEP)

    assert env.ci.build(PIPELINE, build)["state"] == "blocked"
    assert current(env, number)["merged"] is True
    [note] = bodies(env, number)
    assert "did not run" in note
    assert "Benchmarks (optional)" in note


async def test_a_blocked_build_waits_when_configured_to(ci_env: Harness) -> None:
    env = ci_env
    config = CONFIG + LANDING.replace("}", ", blocked_builds: wait}") + BUILDKITE
    pull = await open_bump(env, config=config)
    number = int(pull["number"])
    await approve(env, pull, MAINTAINER)

    await finished_build(env, pull, PASSING, BLOCKED_STEP)

    assert current(env, number)["merged"] is False
    assert bodies(env, number) == []
