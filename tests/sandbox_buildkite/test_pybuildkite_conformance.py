"""pybuildkite 1.3.0, an independent client, drives the stand-in.

pybuildkite is synchronous (requests), so each call runs in a thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pybuildkite.buildkite import Buildkite, BuildState, LogFormat

from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.buildkite_state import JobSpec

from .helpers import API_TOKEN, AUDIT_KEY, AUDIT_LOG, ORG, PIPELINE, SHA_A, SHA_B, audit_job

REPORT = b"abi report\n"


@pytest.fixture
def client(bk: BuildkiteSandbox) -> Any:
    found = Buildkite()
    found.set_access_token(API_TOKEN)
    found.base_url = bk.base_url + "/"
    return found


@pytest.fixture
def builds(bk: BuildkiteSandbox) -> list[dict[str, Any]]:
    return [
        bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[JobSpec("build", "Build")]),
        bk.create_build(
            PIPELINE,
            commit=SHA_B,
            branch="followup-bot/bump/flash-attention",
            jobs=[JobSpec("build", "Build"), audit_job(log=AUDIT_LOG, artifacts={"r.txt": REPORT})],
            pull_request={"id": "49599"},
        ),
    ]


async def test_list_builds_by_commit_and_branch(client: Any, builds: list[dict[str, Any]]) -> None:
    api = client.builds()
    by_commit = await asyncio.to_thread(api.list_all_for_pipeline, ORG, PIPELINE, commit=SHA_B)
    assert [b["number"] for b in by_commit] == [2]
    assert by_commit[0]["pull_request"]["id"] == "49599"
    by_branch = await asyncio.to_thread(
        api.list_all_for_pipeline, ORG, PIPELINE, branch="followup-bot/bump/flash-attention"
    )
    assert [b["number"] for b in by_branch] == [2]
    failed = await asyncio.to_thread(
        api.list_all_for_pipeline, ORG, PIPELINE, states=[BuildState.FAILED]
    )
    assert [b["number"] for b in failed] == [2]
    both = await asyncio.to_thread(
        api.list_all_for_pipeline, ORG, PIPELINE, states=[BuildState.FAILED, BuildState.PASSED]
    )
    assert [b["number"] for b in both] == [2, 1]
    in_org = await asyncio.to_thread(api.list_all_for_org, ORG, commit=SHA_A)
    assert [b["number"] for b in in_org] == [1]


async def test_pagination(bk: BuildkiteSandbox, client: Any) -> None:
    for _ in range(3):
        bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[JobSpec("b", "B")])
    client.client.per_page = 2
    page = await asyncio.to_thread(
        client.builds().list_all_for_pipeline, ORG, PIPELINE, with_pagination=True
    )
    assert [b["number"] for b in page.body] == [3, 2]
    assert page.next_page == 2
    last = await asyncio.to_thread(
        client.builds().list_all_for_pipeline, ORG, PIPELINE, page=2, with_pagination=True
    )
    assert [b["number"] for b in last.body] == [1]
    assert last.next_page is None
    assert last.previous_page == 1


async def test_get_build_and_retry_job(
    bk: BuildkiteSandbox, client: Any, builds: list[dict[str, Any]]
) -> None:
    build = await asyncio.to_thread(client.builds().get_build_by_number, ORG, PIPELINE, 2)
    assert build["state"] == "failed"
    audit = next(job for job in build["jobs"] if job["step_key"] == AUDIT_KEY)
    bk.set_retry_outcome(AUDIT_KEY, state="passed")
    new = await asyncio.to_thread(client.jobs().retry_job, ORG, PIPELINE, 2, audit["id"])
    assert new["state"] == "scheduled"
    assert new["retries_count"] == 1
    after = await asyncio.to_thread(
        client.builds().get_build_by_number, ORG, PIPELINE, 2, include_retried_jobs=True
    )
    assert [j["retried"] for j in after["jobs"]] == [False, True, False]
    assert after["state"] == "passed"
    with pytest.raises(Exception, match="400"):
        await asyncio.to_thread(client.jobs().retry_job, ORG, PIPELINE, 2, audit["id"])


async def test_job_log_in_each_format(client: Any, builds: list[dict[str, Any]]) -> None:
    audit = builds[1]["jobs"][1]
    jobs = client.jobs()
    raw = await asyncio.to_thread(
        jobs.get_job_log, ORG, PIPELINE, 2, audit["id"], log_format=LogFormat.TEXT
    )
    assert raw == AUDIT_LOG
    as_json = await asyncio.to_thread(
        jobs.get_job_log, ORG, PIPELINE, 2, audit["id"], log_format=LogFormat.JSON
    )
    assert as_json["size"] == len(AUDIT_LOG)
    html = await asyncio.to_thread(jobs.get_job_log, ORG, PIPELINE, 2, audit["id"])
    assert b"Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES" in html


async def test_artifacts(client: Any, builds: list[dict[str, Any]]) -> None:
    artifacts = client.artifacts()
    listed = await asyncio.to_thread(artifacts.list_artifacts_for_build, ORG, PIPELINE, 2)
    assert [a["path"] for a in listed] == ["r.txt"]
    job_id = listed[0]["job_id"]
    per_job = await asyncio.to_thread(artifacts.list_artifacts_for_job, ORG, PIPELINE, 2, job_id)
    assert per_job == listed
    data = await asyncio.to_thread(
        artifacts.download_artifact, ORG, PIPELINE, 2, job_id, listed[0]["id"]
    )
    assert data == REPORT


async def test_annotations_list(
    bk: BuildkiteSandbox, client: Any, builds: list[dict[str, Any]]
) -> None:
    listed = await asyncio.to_thread(client.annotations().list_annotations, ORG, PIPELINE, 2)
    assert listed == []
