"""GitHub requests per Buildkite build, counted from the GitHub stand-in's request log.

A vLLM main build has some 200 jobs, and Buildkite sends a ``job.finished`` for each
and a ``build.finished`` at the end. Each handler decides from the payload first (the
job's state, the branch, a nightly build) and then takes the repository's config read
at main's head in the last minutes, so what no feature acts on costs GitHub nothing,
and a green main build only what its audit evidence needs (main's head, the
stale-entries PR, the allowlist file). Before, every event read main's head: one
request per job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.abi.log import PASSED
from bot.context.config_load import RECENT_KIND, RECENT_MAX_AGE, Recent
from bot.service.reconcile import enqueue_tick
from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from sandbox.scenario import World
from sandbox.vllm_ci_tree import vllm_ci_files
from sandbox.vllm_shapes import (
    ABI_CHECK_FILE,
    AUDIT_STEP,
    DOWNSTREAM,
    FA3_ENTRY,
    LANDING_CONFIG,
    MAIN_RED_CONFIG,
    PIPELINE,
    stale_line,
)

# Every Buildkite feature on: red on main, the allowlist audit, landing, routing.
CONFIG = (
    MAIN_RED_CONFIG
    + LANDING_CONFIG
    + f"allowlist:\n  file: {ABI_CHECK_FILE}\n  audit_step: {AUDIT_STEP}\n"
)
JOBS = 200
# A clean audit on main: is there a stale-entries PR to close, and what does the file say.
GREEN_MAIN = ["repos/get-branch", "pulls/list", "repos/get-content"]
WRITES = {"POST", "PATCH", "PUT", "DELETE"}


def github_requests(env: Harness) -> list[str]:
    """Every request to GitHub, the installation token included."""
    return [str(r.operation_id) for r in env.sandbox.requests]


def passing_jobs(count: int) -> list[JobSpec]:
    return [World.job(f"step-{n}", name=f"Step {n}") for n in range(count)]


async def served_world(env: Harness) -> World:
    """vLLM's tree and config, the allowlist, the pipeline; a tick has run (a running
    bot has: token, default branch and config are known)."""
    w = World(env)
    w.downstream(w.upstream(), config=CONFIG, files=vllm_ci_files())
    w.allowlist(FA3_ENTRY)
    await w.start()
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
    await w.settle()
    env.sandbox.reset_log()
    return w


async def build(
    w: World, branch: str, jobs: Sequence[JobSpec], pull: dict[str, Any] | None = None
) -> int:
    """A finished build of main's head on ``branch``, every webhook handled."""
    created = w.ci.create_build(
        PIPELINE, commit=w.github.head(DOWNSTREAM), branch=branch, jobs=jobs, pull_request=pull
    )
    number = int(created["number"])
    await w.ci.finish_build(PIPELINE, number)
    await w.settle()
    return number


async def test_a_green_main_build_costs_three_requests_whatever_its_jobs(ci_env: Harness) -> None:
    w = await served_world(ci_env)
    audit = World.job(AUDIT_STEP, name=":nvidia: Torch Stable ABI Audit", log=[PASSED])
    await build(w, "main", [*passing_jobs(JOBS - 1), audit])

    assert sorted(github_requests(ci_env)) == sorted(GREEN_MAIN)
    assert len(w.ci.deliveries) == JOBS + 1  # every job.finished and the build.finished


async def test_a_main_build_without_evidence_costs_no_request(ci_env: Harness) -> None:
    w = await served_world(ci_env)
    await build(w, "main", passing_jobs(JOBS))
    assert github_requests(ci_env) == []


async def test_a_pull_requests_build_costs_no_request(ci_env: Harness) -> None:
    """Failed jobs of a PR's build: no feature acts on them (retry-flaky is asked by a
    comment, landing only watches bump branches), nor on the build."""
    w = await served_world(ci_env)
    failed = [
        World.job(f"gpu-{n}", state="failed", log=["FAILED tests/x.py::test_y"]) for n in range(20)
    ]
    pull = {"id": "4242", "base": "main", "repository": f"https://github.com/{DOWNSTREAM}.git"}
    await build(w, "feature", [*passing_jobs(JOBS - 20), *failed], pull)
    assert github_requests(ci_env) == []


async def test_a_config_older_than_its_bound_is_read_again(ci_env: Harness) -> None:
    """A replica that handled neither the push nor a tick lately: once its config is
    older than the bound, the next build event reads main's head again, once."""
    w = await served_world(ci_env)
    cache = ci_env.running.services.cache
    recent = cache[(RECENT_KIND, DOWNSTREAM)]
    assert isinstance(recent, Recent)
    cache[(RECENT_KIND, DOWNSTREAM)] = Recent(
        recent.sha, recent.config, recent.read_at - RECENT_MAX_AGE
    )
    await build(w, "main", passing_jobs(3))
    assert github_requests(ci_env) == ["repos/get-branch"]


async def test_a_config_pushed_to_main_is_taken_by_the_next_build(ci_env: Harness) -> None:
    """Without the allowlist section, main's audit feeds nothing; the push that adds it
    refreshes the config, and the next main build's evidence opens the stale-entries PR."""
    w = World(ci_env)
    w.downstream(w.upstream(), config=MAIN_RED_CONFIG, files=vllm_ci_files())
    w.allowlist(FA3_ENTRY)
    await w.start()
    await enqueue_tick(ci_env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
    await w.settle()
    stale = World.job(
        AUDIT_STEP,
        state="failed",
        log=[stale_line(FA3_ENTRY)],
    )
    await build(w, "main", [stale])
    assert [p for p in w.github.pulls(DOWNSTREAM) if p["state"] == "open"] == []

    await w.github.push_commit(DOWNSTREAM, {".github/followup-bot.yml": CONFIG}, "Audit")
    await w.settle()
    await build(w, "main", [stale])
    [pull] = [p for p in w.github.pulls(DOWNSTREAM) if p["state"] == "open"]
    assert "allowlist" in pull["title"].lower()
