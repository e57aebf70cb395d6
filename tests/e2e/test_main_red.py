"""A step red on main, end to end through the GitHub and Buildkite stand-ins.

Incident A replayed: a migration PR re-routes the torch ABI audit to a CPU queue and the
CPU image (and re-routes another step, which is the migration's point); two main builds
fail the audit the same way. The bot opens one issue with the signal table and the
culprit, comments once on the culprit PR, and opens a partial revert PR whose diff is
exactly the audit step's two keys — with the "CI routing" check green on it. A third red
build writes nothing; a green one closes the issue and the revert PR. A step that fails
only on infrastructure, or fails differently each time, gets nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from bot.main_red import text as red_text
from bot.routing_check.report import CHECK_NAME
from bot.store.kinds import Kind, signal_key
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_ci_tree import (
    AUDIT_FILE,
    AUDIT_KEY,
    TEST_AREAS,
    before_incident_a,
    vllm_ci_files,
)
from sandbox.vllm_shapes import DOWNSTREAM, MAIN_RED_CONFIG, PIPELINE

CPU_FILE = f"{TEST_AREAS}/cpu.yaml"
REVERT_BRANCH = red_text.revert_branch(AUDIT_KEY)
RED_CONFIG = MAIN_RED_CONFIG
AUDIT_FAILURE = (
    "Checking vllm/_C_AVX2.abi3.so",
    "FAILED tests/abi/test_stable_abi.py::test_extensions_are_stable - AssertionError",
)
WRITES = {"POST", "PATCH", "PUT", "DELETE"}
NOT_FOLLOW_UPS = {"apps/create-installation-access-token", "checks/create", "checks/update"}


def migrated(files: dict[str, str]) -> dict[str, str]:
    """The migration PR: the audit to the CPU queue (the mistake), CPU Full to a medium
    CPU agent (the migration's real point, which must survive the revert)."""
    return {
        AUDIT_FILE: vllm_ci_files(incident_a=True)[AUDIT_FILE],
        CPU_FILE: files[CPU_FILE].replace(
            "  - label: CPU Full\n    timeout_in_minutes: 30\n    device: cpu\n",
            "  - label: CPU Full\n    timeout_in_minutes: 30\n    device: cpu-medium\n",
        ),
    }


def audit(state: str, *log: str, **more: Any) -> JobSpec:
    return World.job(AUDIT_KEY, state=state, log=list(log) or ["all extensions are stable"], **more)


def others() -> list[JobSpec]:
    return [World.job("misc-1", log=["ok"]), World.job("cpu-full", log=["ok"])]


async def main_build(w: World, jobs: Sequence[JobSpec]) -> int:
    number = await w.build(None, jobs, commit=w.github.head(DOWNSTREAM), branch="main")
    await w.settle()
    return number


def follow_up_writes(env: Harness) -> list[str]:
    return [
        f"{r.method} {r.path}"
        for r in env.sandbox.requests
        if r.method in WRITES and r.operation_id not in NOT_FOLLOW_UPS
    ]


def issues(env: Harness) -> list[dict[str, Any]]:
    state = env.sandbox.repo(DOWNSTREAM)
    return [
        {"number": i.number, "title": i.title, "body": i.body or "", "state": i.state}
        for i in state.issues.values()
        if i.pull is None and "red on main" in i.title
    ]


def revert_pulls(env: Harness, state: str = "all") -> list[dict[str, Any]]:
    return [
        pr
        for pr in env.sandbox.pulls(DOWNSTREAM, state=state)
        if pr["head"]["ref"] == REVERT_BRANCH
    ]


def changed_lines(old: str, new: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def seed_incident_a(env: Harness) -> World:
    """vLLM's tree before the migration, the bot's config, the pipeline and its author."""
    w = World(env)
    w.downstream(w.upstream(), config=RED_CONFIG, files=before_incident_a())
    w.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
    w.person("alice", "write")
    return w


async def finish_main_build(w: World, jobs: Sequence[JobSpec]) -> int:
    """A finished build of main's head, its webhooks delivered (nothing awaited)."""
    build = w.ci.create_build(PIPELINE, commit=w.github.head(DOWNSTREAM), branch="main", jobs=jobs)
    await w.ci.finish_build(PIPELINE, int(build["number"]))
    return int(build["number"])


async def merge_migration(w: World) -> tuple[int, str]:
    """An unrelated commit, the migration PR merged, another unrelated commit; returns
    the culprit PR and its squash commit."""
    files = before_incident_a()
    w.github.commit(DOWNSTREAM, {"docs/usage.md": "# usage\n"}, "Document usage (#24490)")
    w.github.commit(DOWNSTREAM, migrated(files), "Route CPU-only steps", branch="cpu-queues")
    pull = w.github.open_pull(
        DOWNSTREAM, head="cpu-queues", title="[CI] Route CPU-only steps to CPU queues", by="alice"
    )
    culprit = w.github.merge_pull(DOWNSTREAM, int(pull["number"]))
    w.github.commit(DOWNSTREAM, {"vllm/engine.py": "# engine\n"}, "Speed up the engine (#24510)")
    await w.github.flush()
    return int(pull["number"]), culprit


async def incident_a(env: Harness) -> tuple[World, int, str]:
    """The world up to the migration merged; returns it, the culprit PR and its sha."""
    w = seed_incident_a(env)
    await w.start()
    await main_build(w, [audit("passed"), *others()])
    pull, culprit = await merge_migration(w)
    await w.settle()
    return w, pull, culprit


async def test_incident_a_issue_comment_and_the_two_line_partial_revert(ci_env: Harness) -> None:
    w, culprit_pr, culprit = await incident_a(ci_env)
    first = await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    assert issues(ci_env) == []  # red once is not broken yet
    assert revert_pulls(ci_env) == []
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])

    [issue] = issues(ci_env)
    assert issue["title"] == f"`{AUDIT_KEY}` red on main since build #{first}"
    assert culprit[:7] in issue["body"]
    assert "changed the step's route" in issue["body"]
    assert "small_cpu_queue_premerge" in issue["body"]  # the route, as of the first red
    assert "test_extensions_are_stable" in issue["body"]  # the failure signature

    [revert] = revert_pulls(ci_env)
    assert revert["state"] == "open"
    assert f"#{revert['number']}" in issue["body"]  # the issue links the fix
    assert f"#{issue['number']}" in revert["body"]
    main = ci_env.sandbox.head(DOWNSTREAM)
    head = revert["head"]["sha"]
    before = ci_env.sandbox.read_file(DOWNSTREAM, main, AUDIT_FILE)
    after = ci_env.sandbox.read_file(DOWNSTREAM, head, AUDIT_FILE)
    assert before is not None
    assert after is not None
    # The human fix: the file's depends_on back, the step's device gone.
    assert changed_lines(before, after) == [
        "-  - image-build-cpu",
        "+  - image-build",
        "-    device: cpu-small",
    ]
    # Nothing else of the migration is touched: the CPU step keeps its new device.
    assert ci_env.sandbox.read_file(DOWNSTREAM, head, CPU_FILE) == ci_env.sandbox.read_file(
        DOWNSTREAM, main, CPU_FILE
    )
    repo = ci_env.sandbox.repo(DOWNSTREAM)
    [check] = [r for r in repo.check_runs.values() if r.head_sha == head and r.name == CHECK_NAME]
    assert (check.status, check.conclusion) == ("completed", "success")

    comments = w.comments({"number": culprit_pr})
    assert len(comments) == 1
    assert f"#{issue['number']}" in comments[0]

    # A third red build changes nothing: no GitHub write at all.
    writes = len(follow_up_writes(ci_env))
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    assert len(follow_up_writes(ci_env)) == writes

    # Green again (the fix landed by hand): the issue and the revert PR are closed.
    await main_build(w, [audit("passed"), *others()])
    [closed] = issues(ci_env)
    assert closed["state"] == "closed"
    assert revert_pulls(ci_env, "open") == []
    doc = await ci_env.running.services.store.get_state(
        Kind.MAIN_SIGNAL, signal_key(DOWNSTREAM, PIPELINE, AUDIT_KEY)
    )
    assert doc is not None
    assert doc["state"] == "green"


async def test_a_flaky_only_red_step_yields_nothing(ci_env: Harness) -> None:
    w, _pr, _culprit = await incident_a(ci_env)
    writes = len(follow_up_writes(ci_env))
    # Infra both times (agent lost), then two different failures: never "broken".
    await main_build(w, [audit("failed", "Killed", exit_status=-1), *others()])
    await main_build(w, [audit("failed", "Killed", exit_status=-1), *others()])
    await main_build(w, [audit("failed", "FAILED tests/a.py::test_one - x"), *others()])
    await main_build(w, [audit("failed", "FAILED tests/b.py::test_two - y"), *others()])
    assert issues(ci_env) == []
    assert revert_pulls(ci_env) == []
    assert len(follow_up_writes(ci_env)) == writes


async def test_why_red_prints_the_table_and_ranking_on_demand(ci_env: Harness) -> None:
    w, culprit_pr, culprit = await incident_a(ci_env)
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    w.person("bob", "read")
    pull = {"number": culprit_pr}
    await w.comment(pull, f"@bot why-red {AUDIT_KEY}", by="alice")
    await w.comment(pull, "@bot why-red no-such-step", by="alice")
    await w.comment(pull, f"@bot why-red {AUDIT_KEY}", by="bob")
    await w.settle()
    replies = [c for c in w.comments(pull) if c.startswith(("@alice", "@bob"))]
    assert len(replies) == 3
    red, unknown, refused = replies
    assert red.startswith(f"@alice `{AUDIT_KEY}` on main: red")
    assert "| build | commit | state | failure signature | route |" in red
    assert f"{culprit[:7]} \\[CI\\] Route CPU-only steps to CPU queues (#{culprit_pr})" in red
    assert "changed the step's route" in red
    assert "no step `no-such-step` in the last 30 main builds of `ci`" in unknown
    assert refused.startswith("@bob I did not run")
    assert issues(ci_env) == []  # asking writes nothing else


async def confirming_world(env: Harness, *, more: str = "") -> tuple[World, int]:
    """Incident A with `main_red.confirm: true`; returns the world and the culprit PR."""
    w = World(env)
    config = RED_CONFIG.replace("main_red:\n", f"main_red:\n  confirm: true\n{more}")
    w.downstream(w.upstream(), config=config, files=before_incident_a())
    w.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
    w.person("alice", "write")
    await w.start()
    await main_build(w, [audit("passed"), *others()])
    pull, _culprit = await merge_migration(w)
    await w.settle()
    return w, pull


async def test_confirm_retries_the_first_red_job_once_then_follows_up(ci_env: Harness) -> None:
    w, _pull = await confirming_world(ci_env)
    first = await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    # The retry the bot will ask for fails the same way, once it is told to run.
    first_job = next(j for j in w.ci.build(PIPELINE, first)["jobs"] if j["step_key"] == AUDIT_KEY)
    w.ci.set_retry_outcome(
        first_job["id"],
        state="failed",
        exit_status=1,
        log="\n".join(AUDIT_FAILURE),
        after="on_demand",
    )
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    assert issues(ci_env) == []  # confirming: not called broken yet
    retries = [r for r in w.ci.requests if r.path.endswith("/retry")]
    assert len(retries) == 1

    [retry] = [j for j in w.ci.build(PIPELINE, first)["jobs"] if j.get("retries_count") == 1]
    await w.ci.complete_job(retry["id"])  # build #first finishes again
    await w.settle()

    [issue] = issues(ci_env)
    assert issue["title"] == f"`{AUDIT_KEY}` red on main since build #{first}"
    assert len([r for r in w.ci.requests if r.path.endswith("/retry")]) == 1  # never more
    assert len(revert_pulls(ci_env)) == 1


async def test_confirm_a_retry_someone_canceled_is_judged_without_it(ci_env: Harness) -> None:
    # Only the audit is watched; another step fails too, so the build stays failed once the
    # audit's retry is canceled.
    w, _pull = await confirming_world(ci_env, more=f"  steps: [{AUDIT_KEY}]\n")
    other = World.job("misc-2", state="failed", log=["FAILED tests/misc.py::test_two - E"])
    first = await main_build(w, [audit("failed", *AUDIT_FAILURE), *others(), other])
    first_job = next(j for j in w.ci.build(PIPELINE, first)["jobs"] if j["step_key"] == AUDIT_KEY)
    # A person cancels the confirming retry while it runs: it never finishes failing.
    w.ci.set_retry_outcome(first_job["id"], state="canceled", exit_status=-1, log="stopping")
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others(), other])
    await w.settle()

    # Judged as if confirmation were off: the audit is broken since the first build.
    titles = {issue["title"] for issue in issues(ci_env)}
    assert f"`{AUDIT_KEY}` red on main since build #{first}" in titles
    assert len([r for r in w.ci.requests if r.path.endswith("/retry")]) == 1  # never more


async def test_confirm_a_first_red_job_that_passes_on_retry_is_flaky(ci_env: Harness) -> None:
    w, _pull = await confirming_world(ci_env)
    first = await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    first_job = next(j for j in w.ci.build(PIPELINE, first)["jobs"] if j["step_key"] == AUDIT_KEY)
    w.ci.set_retry_outcome(first_job["id"], state="passed", exit_status=0, log="ok")
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    await w.settle()

    assert issues(ci_env) == []
    assert revert_pulls(ci_env) == []
    assert len([r for r in w.ci.requests if r.path.endswith("/retry")]) == 1


async def ask_why_red(w: World, pull: dict[str, Any]) -> str:
    before = len(w.comments(pull))
    await w.comment(pull, f"@bot why-red {AUDIT_KEY}", by="alice")
    await w.settle()
    [reply] = [c for c in w.comments(pull)[before:] if c.startswith("@alice")]
    return reply


async def test_why_red_keeps_the_ranking_in_every_state(ci_env: Harness) -> None:
    """Red once, broken, unknown (a log naming no failure) and green again: each reply
    has the table and the ranking of the step's last red streak."""
    w, culprit_pr, culprit = await incident_a(ci_env)
    pull = {"number": culprit_pr}
    ranked = f"{culprit[:7]} \\[CI\\] Route CPU-only steps to CPU queues (#{culprit_pr})"
    on_main = f"@alice `{AUDIT_KEY}` on main"
    replies = {}
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    replies["red"] = await ask_why_red(w, pull)
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    replies["broken"] = await ask_why_red(w, pull)
    # A log that says only that the job failed: no signature to compare.
    await main_build(
        w, [World.job(AUDIT_KEY, state="failed", log=["Exited with status 1"]), *others()]
    )
    replies["unknown"] = await ask_why_red(w, pull)
    green = await main_build(w, [audit("passed"), *others()])
    replies["green"] = await ask_why_red(w, pull)

    assert replies["red"].startswith(f"{on_main}: red (")
    assert replies["broken"].startswith(f"{on_main}: broken (")
    assert replies["unknown"].startswith(f"{on_main}: unknown (no failed test, error line")
    assert replies["green"].startswith(
        f"@alice `{AUDIT_KEY}` is green on main: it passed in build #{green}"
    )
    assert "Its last red run before that: unknown (" in replies["green"]
    for state, reply in replies.items():
        assert red_text.SIGNAL_HEAD in reply, state
        assert ranked in reply, state
        assert "changed the step's route" in reply, state


async def test_a_signal_stored_before_lanes_is_the_regular_lanes(ci_env: Harness) -> None:
    w, _pr, _culprit = await incident_a(ci_env)
    first = await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    # An episode a bot without lanes finished, under the key it used (no lane in it).
    old = {
        "state": "broken",
        "reason": "failed the same way",
        "since": first,
        "last_green": first - 1,
        "issue": 4242,
        "complete": True,
        "closed": False,
    }
    store = ci_env.running.services.store
    await store.put_state(Kind.MAIN_SIGNAL, f"{DOWNSTREAM}#red/{PIPELINE}/{AUDIT_KEY}", old)
    writes = len(follow_up_writes(ci_env))
    await main_build(w, [audit("failed", *AUDIT_FAILURE), *others()])
    # Read as the regular lane's episode, finished: no second issue, no write at all.
    assert issues(ci_env) == []
    assert len(follow_up_writes(ci_env)) == writes
