"""The jobs list (cursor pagination) and Buildkite's retry rules."""

from __future__ import annotations

import pytest

from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.buildkite_state import ALREADY_RETRIED, NOT_RETRYABLE, JobSpec

from .helpers import AUDIT_KEY, ORG, PIPELINE, SHA_A, BuildkiteApi, api_path, audit_job


def make_build(bk: BuildkiteSandbox, *jobs: JobSpec) -> list[str]:
    build = bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=list(jobs))
    return [job["id"] for job in build["jobs"]]


async def test_jobs_list_cursor_and_filters(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    ids = make_build(
        bk,
        JobSpec("a", "A"),
        JobSpec("b", "B", state="failed", exit_status=1),
        JobSpec("c", "C"),
        audit_job(),
    )
    first = await api("GET", api_path("/builds/1/jobs"), params={"per_page": "3"})
    assert [j["id"] for j in first.body["items"]] == ids[:3]
    next_url = first.body["links"]["next"]
    assert next_url.startswith(bk.base_url)
    rest = await api("GET", next_url)
    assert [j["id"] for j in rest.body["items"]] == ids[3:]
    assert rest.body["links"]["next"] is None

    failed = await api("GET", api_path("/builds/1/jobs"), params=[("state[]", "failed")])
    assert [j["step_key"] for j in failed.body["items"]] == ["b", AUDIT_KEY]
    keyed = await api("GET", api_path("/builds/1/jobs"), params={"step_key": AUDIT_KEY})
    assert [j["id"] for j in keyed.body["items"]] == ids[3:]
    bad = await api("GET", api_path("/builds/1/jobs"), params={"cursor": "!!"})
    assert bad.status == 422


async def test_jobs_list_includes_retried_jobs(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    (old,) = make_build(bk, audit_job())
    new = (await api("PUT", api_path(f"/builds/1/jobs/{old}/retry"))).body["id"]
    listed = await api("GET", api_path("/builds/1/jobs"))
    assert [j["id"] for j in listed.body["items"]] == [old, new]


async def test_retry_makes_a_new_job_once(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    (old,) = make_build(bk, audit_job(state="timed_out", exit_status=None))
    answer = await api("PUT", api_path(f"/builds/1/jobs/{old}/retry"))
    assert answer.status == 200
    new = answer.body
    assert new["id"] != old
    assert new["state"] == "scheduled"
    assert new["step_key"] == AUDIT_KEY
    assert new["retries_count"] == 1
    assert new["retry_type"] == "manual"
    assert new["finished_at"] is None
    assert bk.job(old)["retried"] is True
    assert bk.job(old)["retried_in_job_id"] == new["id"]
    assert bk.build(PIPELINE, 1)["state"] == "running"

    again = await api("PUT", f"/organizations/{ORG}/jobs/{old}/retry")
    assert again.status == 400
    assert again.body == {"message": ALREADY_RETRIED}


async def test_retry_of_the_retry_counts_up(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    (old,) = make_build(bk, audit_job())
    bk.set_retry_outcome(old, state="failed", exit_status=1)
    first = (await api("PUT", f"/organizations/{ORG}/jobs/{old}/retry")).body
    second = (await api("PUT", f"/organizations/{ORG}/jobs/{first['id']}/retry")).body
    assert second["retries_count"] == 2


@pytest.mark.parametrize("state", ["passed", "scheduled", "running", "skipped"])
async def test_only_failed_like_jobs_can_be_retried(
    bk: BuildkiteSandbox, api: BuildkiteApi, state: str
) -> None:
    (job,) = make_build(bk, JobSpec("k", "K", state=state))
    answer = await api("PUT", f"/organizations/{ORG}/jobs/{job}/retry")
    assert answer.status == 400
    assert answer.body == {"message": NOT_RETRYABLE}
    assert len(bk.build(PIPELINE, 1)["jobs"]) == 1


async def test_retry_through_the_wrong_build_is_404(
    bk: BuildkiteSandbox, api: BuildkiteApi
) -> None:
    (job,) = make_build(bk, audit_job())
    make_build(bk, audit_job())
    assert (await api("PUT", api_path(f"/builds/2/jobs/{job}/retry"))).status == 404
    assert (await api("PUT", f"/organizations/{ORG}/jobs/unknown/retry")).status == 404


async def test_immediate_outcome_settles_the_build(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    ids = make_build(bk, JobSpec("a", "A"), audit_job())
    assert bk.build(PIPELINE, 1)["state"] == "failed"
    bk.set_retry_outcome(AUDIT_KEY, state="passed", log="Torch stable ABI check passed.\n")
    answer = await api("PUT", api_path(f"/builds/1/jobs/{ids[1]}/retry"))
    assert answer.body["state"] == "scheduled"  # the answer shows it as just scheduled
    new = bk.job(answer.body["id"])
    assert new["state"] == "passed"
    assert new["exit_status"] == 0
    assert new["finished_at"] is not None
    build = bk.build(PIPELINE, 1)
    assert build["state"] == "passed"
    assert build["finished_at"] is not None
    log = await api("GET", api_path(f"/builds/1/jobs/{new['id']}/log.txt"))
    assert log.raw == b"Torch stable ABI check passed.\n"


async def test_on_demand_outcome_waits(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    ids = make_build(bk, audit_job(), JobSpec("b", "B", state="failed", exit_status=2))
    bk.set_retry_outcome(ids[0], state="passed", after="on_demand")
    new = (await api("PUT", api_path(f"/builds/1/jobs/{ids[0]}/retry"))).body["id"]
    assert bk.job(new)["state"] == "scheduled"
    assert bk.build(PIPELINE, 1)["state"] == "failing"  # b still failed, a retry pending
    await bk.complete_job(new)
    assert bk.job(new)["state"] == "passed"
    assert bk.build(PIPELINE, 1)["state"] == "failed"
    with pytest.raises(KeyError, match="no pending retry outcome"):
        await bk.complete_job(new)


async def test_retry_without_outcome_stays_scheduled(
    bk: BuildkiteSandbox, api: BuildkiteApi
) -> None:
    (old,) = make_build(bk, audit_job())
    new = (await api("PUT", f"/organizations/{ORG}/jobs/{old}/retry")).body["id"]
    assert bk.job(new)["state"] == "scheduled"
    with pytest.raises(KeyError):
        await bk.complete_job(new)


async def test_retry_failed_jobs_retries_every_failed_job(
    bk: BuildkiteSandbox, api: BuildkiteApi
) -> None:
    make_build(
        bk,
        JobSpec("a", "A"),
        audit_job(),
        JobSpec("t", "T", state="timed_out", exit_status=None),
        JobSpec("c", "C", state="canceled", exit_status=None),
    )
    answer = await api("PUT", api_path("/builds/1/retry_failed_jobs"))
    assert answer.status == 200
    states = [j["state"] for j in answer.body["jobs"]]
    assert states == ["passed", "canceled", "scheduled", "scheduled"]
    assert bk.requests[-1].route == "builds.retry_failed_jobs"
    only = await api("PUT", api_path("/builds/1/retry_failed_jobs"), {"states": "canceled"})
    assert [j["state"] for j in only.body["jobs"]].count("scheduled") == 3


async def test_malformed_json_body_is_400(bk: BuildkiteSandbox, api: BuildkiteApi) -> None:
    make_build(bk, audit_job())
    answer = await api.session.put(
        bk.base_url + api_path("/builds/1/retry_failed_jobs"),
        data=b"{not json",
        headers={"Authorization": f"Bearer {api.token}"},
    )
    assert answer.status == 400
    answer.release()
