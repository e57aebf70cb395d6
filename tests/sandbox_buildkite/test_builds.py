"""Builds over HTTP: auth, filters, pagination, retried jobs, JSON shape."""

from __future__ import annotations

import re

import pytest

from sandbox.buildkite_server import AUTH_REQUIRED, BuildkiteSandbox
from sandbox.buildkite_state import JobSpec

from .helpers import ORG, PIPELINE, SHA_A, SHA_B, BuildkiteApi, api_path, audit_job

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def passing(key: str = "build") -> JobSpec:
    return JobSpec(key, key.title())


async def test_bad_or_missing_token_is_401(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    wrong = await api("GET", api_path("/builds"), token="nope")
    assert wrong.status == 401
    assert wrong.body == {"message": AUTH_REQUIRED}
    missing = await api("GET", api_path("/builds"), headers={"Authorization": ""})
    assert missing.status == 401
    assert [r.status for r in bk.requests] == [401, 401]


async def test_other_organization_is_404(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    answer = await api("GET", "/organizations/elsewhere/pipelines/ci/builds")
    assert answer.status == 404
    assert answer.body == {"message": "Not Found"}
    assert (await api("GET", f"/organizations/{ORG}/pipelines/nope/builds")).status == 404


async def test_filters_by_commit_branch_and_state(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[passing()])
    bk.create_build(PIPELINE, commit=SHA_B, branch="feature", jobs=[audit_job()])
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])

    by_commit = await api("GET", api_path("/builds"), params={"commit": SHA_A})
    assert [b["number"] for b in by_commit.body] == [3, 1]  # newest first
    by_branch = await api("GET", api_path("/builds"), params={"branch": "feature"})
    assert [b["number"] for b in by_branch.body] == [2]
    failed = await api("GET", api_path("/builds"), params=[("state[]", "failed")])
    assert [b["number"] for b in failed.body] == [3, 2]
    either = await api(
        "GET", api_path("/builds"), params=[("state[]", "passed"), ("state[]", "failed")]
    )
    assert [b["number"] for b in either.body] == [3, 2, 1]
    single = await api("GET", api_path("/builds"), params={"state": "passed", "commit": SHA_A})
    assert [b["number"] for b in single.body] == [1]
    finished = await api("GET", api_path("/builds"), params={"state": "finished"})
    assert len(finished.body) == 3


async def test_page_pagination_with_link_header(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    for _ in range(5):
        bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[passing()])
    first = await api("GET", api_path("/builds"), params={"per_page": "2"})
    assert [b["number"] for b in first.body] == [5, 4]
    assert 'rel="next"' in first.headers["Link"]
    assert 'rel="prev"' not in first.headers["Link"]
    next_url = re.search(r'<([^>]+)>; rel="next"', first.headers["Link"])
    assert next_url is not None
    second = await api("GET", next_url.group(1))
    assert [b["number"] for b in second.body] == [3, 2]
    last = await api("GET", api_path("/builds"), params={"per_page": "2", "page": "3"})
    assert [b["number"] for b in last.body] == [1]
    assert 'rel="next"' not in last.headers["Link"]
    assert 'rel="prev"' in last.headers["Link"]


async def test_organization_wide_list_spans_pipelines(
    bk: BuildkiteSandbox, api: BuildkiteApi
) -> None:
    bk.add_pipeline("release")
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[passing()])
    bk.create_build("release", commit=SHA_A, branch="main", jobs=[passing()])
    answer = await api("GET", f"/organizations/{ORG}/builds", params={"commit": SHA_A})
    assert [b["pipeline"]["slug"] for b in answer.body] == ["release", PIPELINE]


async def test_build_shape_and_urls(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(
        PIPELINE,
        commit=SHA_A,
        branch="followup-bot/bump/fa",
        jobs=[audit_job(signal_reason="agent_stop", exit_status=-1)],
        message="Bump flash-attention",
        pull_request={"id": "49599"},
    )
    build = (await api("GET", api_path("/builds/1"))).body
    assert build["state"] == "failed"
    assert build["pull_request"] == {
        "id": "49599",
        "base": "main",
        "repository": "https://github.com/vllm-project/vllm.git",
    }
    assert build["url"] == bk.base_url + api_path("/builds/1")
    assert build["web_url"].startswith(bk.root_url)
    assert build["pipeline"]["slug"] == PIPELINE
    assert build["pipeline"]["name"] == "CI"
    for key in ("created_at", "scheduled_at", "started_at", "finished_at"):
        assert ISO_MS.match(build[key]), key
    (job,) = build["jobs"]
    assert job["type"] == "script"
    assert job["exit_status"] == -1
    assert job["signal_reason"] == "agent_stop"
    assert job["raw_log_url"] == bk.base_url + api_path(f"/builds/1/jobs/{job['id']}/log.txt")
    assert job["agent"]["name"]
    assert job["retried"] is False
    assert job["retried_in_job_id"] is None


async def test_running_build_has_no_finished_at(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(
        PIPELINE,
        commit=SHA_A,
        branch="main",
        jobs=[passing("a"), JobSpec("b", "B", state="scheduled", exit_status=None)],
    )
    build = (await api("GET", api_path("/builds/1"))).body
    assert build["state"] == "running"
    assert build["finished_at"] is None
    assert build["jobs"][1]["agent"] is None
    assert build["jobs"][1]["started_at"] is None


async def test_exclude_jobs_and_unknown_build(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[passing()])
    answer = await api("GET", api_path("/builds"), params={"exclude_jobs": "true"})
    assert "jobs" not in answer.body[0]
    assert (await api("GET", api_path("/builds/9"))).status == 404
    assert (await api("GET", api_path("/builds/x"))).status == 404


async def test_trailing_slash_is_accepted(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[passing()])
    assert (await api("GET", api_path("/builds/1/"))).status == 200


async def test_include_retried_jobs(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    build = bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    old = build["jobs"][0]["id"]
    assert (await api("PUT", f"/organizations/{ORG}/jobs/{old}/retry")).status == 200
    latest = (await api("GET", api_path("/builds/1"))).body["jobs"]
    assert [j["id"] for j in latest] != [old]
    assert len(latest) == 1
    every = (await api("GET", api_path("/builds/1"), params={"include_retried_jobs": "true"})).body
    assert [j["id"] for j in every["jobs"]] == [old, latest[0]["id"]]
    listed = await api("GET", api_path("/builds"), params={"include_retried_jobs": "true"})
    assert len(listed.body[0]["jobs"]) == 2


def test_explicit_state_and_bad_states(bk: BuildkiteSandbox) -> None:
    made = bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[], state="blocked")
    assert made["state"] == "blocked"
    assert made["blocked"] is True
    with pytest.raises(ValueError, match="unknown build state"):
        bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[], state="nope")
    with pytest.raises(ValueError, match="unknown job state"):
        bk.create_build(PIPELINE, commit=SHA_A, branch="m", jobs=[JobSpec("k", "K", state="x")])
    with pytest.raises(KeyError):
        bk.create_build("missing", commit=SHA_A, branch="main", jobs=[])
