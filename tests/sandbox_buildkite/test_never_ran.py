"""Jobs that never ran, as the stand-in shows them: no agent, no start, no exit status."""

from __future__ import annotations

import pytest

from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.buildkite_state import JobSpec

from .helpers import PIPELINE, SHA_A, BuildkiteApi, api_path
from .test_state import build_state

NEVER_STARTED = ["broken", "skipped", "expired", "waiting_failed", "blocked_failed"]


@pytest.mark.parametrize("state", NEVER_STARTED)
async def test_a_finished_job_no_agent_started(
    bk: BuildkiteSandbox, api: BuildkiteApi, state: str
) -> None:
    # JobSpec's default exit status (0) is not what Buildkite shows for it: null
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[JobSpec("k", "K", state=state)])
    [job] = (await api("GET", api_path("/builds/1"))).body["jobs"]
    assert job["state"] == state
    assert job["started_at"] is None
    assert job["agent"] is None
    assert job["exit_status"] is None
    assert job["finished_at"] is not None
    assert (job["expired_at"] is not None) is (state == "expired")


@pytest.mark.parametrize("state", ["broken", "waiting", "blocked", "waiting_failed"])
async def test_a_job_held_back_was_never_runnable(
    bk: BuildkiteSandbox, api: BuildkiteApi, state: str
) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[JobSpec("k", "K", state=state)])
    [job] = (await api("GET", api_path("/builds/1"))).body["jobs"]
    assert job["runnable_at"] is None
    assert job["started_at"] is None


async def test_a_canceled_job_ran_only_if_it_started(
    bk: BuildkiteSandbox, api: BuildkiteApi
) -> None:
    jobs = [
        JobSpec("early", "Early", state="canceled", exit_status=None),
        JobSpec("late", "Late", state="canceled", exit_status=-1, started=True),
    ]
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=jobs)
    early, late = (await api("GET", api_path("/builds/1"))).body["jobs"]
    assert early["started_at"] is None
    assert early["agent"] is None
    assert early["finished_at"] is not None
    assert late["started_at"] is not None
    assert late["agent"] is not None
    assert late["exit_status"] == -1
    listed = await api("GET", api_path("/builds/1/jobs"), params=[("state[]", "canceled")])
    assert [j["step_key"] for j in listed.body["items"]] == ["early", "late"]


@pytest.mark.parametrize(
    ("state", "started"),
    [("broken", True), ("skipped", True), ("blocked", True), ("failed", False), ("running", False)],
)
def test_a_start_the_state_rules_out_is_refused(state: str, started: bool) -> None:
    with pytest.raises(ValueError, match=f"a {state} job cannot have started={started}"):
        build_state(JobSpec("k", "K", state=state, started=started))


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        # a broken or skipped job does not fail a build by itself; a test gives the
        # build's state when it models one that failed (e.g. the job it depended on
        # failed and was retried)
        (("passed", "broken"), "passed"),
        (("passed", "skipped", "waiting_failed"), "passed"),
        (("failed", "broken"), "failed"),
        (("passed", "blocked"), "blocked"),
        (("passed", "waiting"), "running"),
        (("failed", "blocked"), "failing"),
    ],
)
def test_build_state_with_jobs_that_did_not_run(states: tuple[str, ...], expected: str) -> None:
    assert build_state(*(JobSpec(f"k{i}", "K", state=s) for i, s in enumerate(states))) == expected


async def test_a_failed_build_of_jobs_that_never_ran_can_be_created(
    bk: BuildkiteSandbox, api: BuildkiteApi
) -> None:
    jobs = [JobSpec("lint", "Lint"), JobSpec("gpu", "GPU", state="broken")]
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=jobs, state="failed")
    build = (await api("GET", api_path("/builds/1"))).body
    assert build["state"] == "failed"
    assert build["finished_at"] is not None
    assert [j["state"] for j in build["jobs"]] == ["passed", "broken"]
