"""The bot's own Buildkite client against the stand-in (pybuildkite is the other judge)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from bot.buildkite.client import BuildkiteClient
from bot.buildkite.errors import ArtifactTooLarge, JobNotRetryable
from bot.buildkite.transport import BuildkiteConnection
from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.buildkite_state import JobSpec

from ..sandbox.helpers import FakeClock
from .helpers import API_TOKEN, ORG, PIPELINE

COMMIT = "a" * 40
LOG = b"".join(b"\x1b_bk;t=%d\x07line %d\r\n" % (1000 + i, i) for i in range(5000))


class Sleeps:
    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.calls = clock, list[float]()

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        self.clock.now += seconds


@pytest.fixture
def sleeps(clock: FakeClock) -> Sleeps:
    return Sleeps(clock)


@pytest.fixture
def client(
    bk: BuildkiteSandbox, session: aiohttp.ClientSession, clock: FakeClock, sleeps: Sleeps
) -> BuildkiteClient:
    connection = BuildkiteConnection(api_url=bk.base_url, token=API_TOKEN, timeout=10.0)
    return BuildkiteClient(session, connection, clock=clock, sleep=sleeps)


def failed_build(bk: BuildkiteSandbox, n_failed: int = 1) -> dict[str, Any]:
    jobs = [
        JobSpec(step_key=f"test-{i}", name=f"Test {i}", state="failed", exit_status=1, log=LOG)
        for i in range(n_failed)
    ]
    jobs.append(JobSpec(step_key="lint", name="Lint"))
    return bk.create_build(PIPELINE, commit=COMMIT, branch="feature", jobs=jobs)


async def test_builds_by_commit_and_the_build_with_jobs(
    bk: BuildkiteSandbox, client: BuildkiteClient
) -> None:
    made = failed_build(bk)
    bk.create_build(PIPELINE, commit="b" * 40, branch="main", jobs=[JobSpec("x", "X")])
    found = await client.builds(ORG, PIPELINE, commit=COMMIT)
    assert [b["number"] for b in found] == [made["number"]]
    build = await client.build(ORG, PIPELINE, int(made["number"]))
    assert {job["step_key"] for job in build["jobs"]} == {"test-0", "lint"}


async def test_failed_jobs_through_cursor_pages(
    bk: BuildkiteSandbox, client: BuildkiteClient
) -> None:
    made = failed_build(bk, n_failed=45)
    jobs = await client.jobs(ORG, PIPELINE, int(made["number"]), states=["failed"])
    assert len(jobs) == 45
    assert {job["state"] for job in jobs} == {"failed"}


async def test_log_tail_is_the_last_bytes_verbatim(
    bk: BuildkiteSandbox, client: BuildkiteClient
) -> None:
    made = failed_build(bk)
    number = int(made["number"])
    job = next(j for j in bk.build(PIPELINE, number)["jobs"] if j["step_key"] == "test-0")
    tail = await client.job_log_tail(ORG, PIPELINE, number, job["id"], max_bytes=1024)
    assert tail == LOG[-1024:]
    requests = [r for r in bk.requests if r.path.endswith("/log")]
    assert requests[-1].status == 206


async def test_a_job_is_retried_once(bk: BuildkiteSandbox, client: BuildkiteClient) -> None:
    made = failed_build(bk)
    number = int(made["number"])
    job = next(j for j in bk.build(PIPELINE, number)["jobs"] if j["step_key"] == "test-0")
    new = await client.retry_job(ORG, PIPELINE, number, job["id"])
    assert new["id"] != job["id"]
    assert bk.job(job["id"])["retried_in_job_id"] == new["id"]
    with pytest.raises(JobNotRetryable):
        await client.retry_job(ORG, PIPELINE, number, job["id"])
    assert not any(r.route == "builds.retry_failed_jobs" for r in bk.requests)


async def test_429_waits_for_the_reset_the_headers_name(
    bk: BuildkiteSandbox, client: BuildkiteClient, sleeps: Sleeps
) -> None:
    failed_build(bk)
    bk.faults.rate_limit_next(1)
    found = await client.builds(ORG, PIPELINE, commit=COMMIT)
    assert len(found) == 1
    assert len(sleeps.calls) == 1
    assert 0 < sleeps.calls[0] <= 60


async def test_artifact_download_follows_the_redirect_and_is_capped(
    bk: BuildkiteSandbox, client: BuildkiteClient
) -> None:
    made = bk.create_build(
        PIPELINE,
        commit=COMMIT,
        branch="main",
        jobs=[JobSpec("audit", "Audit", artifacts={"audit.json": b'{"ok": true}' * 100})],
    )
    number = int(made["number"])
    [artifact] = await client.artifacts(ORG, PIPELINE, number)
    body = await client.download_artifact(artifact["download_url"], max_bytes=10_000)
    assert body == b'{"ok": true}' * 100
    with pytest.raises(ArtifactTooLarge):
        await client.download_artifact(artifact["download_url"], max_bytes=100)
