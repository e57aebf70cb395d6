"""Webhooks: authentication (signature or token), order, and payload shapes."""

from __future__ import annotations

import pytest

from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.buildkite_state import JobSpec
from sandbox.buildkite_webhooks import STATUS_UNREACHABLE, signature_header

from ..sandbox.helpers import FakeClock
from .helpers import (
    AUDIT_KEY,
    ORG,
    PIPELINE,
    SHA_A,
    WEBHOOK_TOKEN,
    BuildkiteApi,
    Receiver,
    audit_job,
)


def test_signature_header_format() -> None:
    header = signature_header("secret", 1700000000, b'{"a":1}')
    timestamp, signature = header.split(",")
    assert timestamp == "timestamp=1700000000"
    assert signature.startswith("signature=")
    assert len(signature.removeprefix("signature=")) == 64
    assert signature_header("other", 1700000000, b'{"a":1}') != header


async def test_finish_build_sends_jobs_then_build(
    bk: BuildkiteSandbox, receiver: Receiver, clock: FakeClock
) -> None:
    bk.create_build(
        PIPELINE,
        commit=SHA_A,
        branch="main",
        jobs=[JobSpec("a", "A"), audit_job()],
        pull_request={"id": "7"},
    )
    await bk.finish_build(PIPELINE, 1)
    assert receiver.events() == ["job.finished", "job.finished", "build.finished"]
    assert all(receiver.authentic(item) for item in receiver.received)
    signature = receiver.received[0].headers["X-Buildkite-Signature"]
    assert signature.startswith(f"timestamp={int(clock.now)},")
    build_event = receiver.received[-1].payload
    assert build_event["event"] == "build.finished"
    assert "jobs" not in build_event["build"]
    assert build_event["build"]["pull_request"]["id"] == "7"
    assert build_event["pipeline"]["slug"] == PIPELINE
    assert build_event["sender"]["name"]
    assert receiver.received[1].payload["job"]["step_key"] == AUDIT_KEY
    assert [d.status for d in bk.deliveries] == [200, 200, 200]


async def test_tampered_body_fails_the_check(bk: BuildkiteSandbox, receiver: Receiver) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    await bk.finish_build(PIPELINE, 1)
    item = receiver.received[0]
    item.body = item.body.replace(b"failed", b"passed")
    assert not receiver.authentic(item)
    receiver.token = "wrong"
    assert not receiver.authentic(receiver.received[1])


@pytest.mark.parametrize("signature_mode", [False])
async def test_token_mode_sends_the_plain_token(bk: BuildkiteSandbox, receiver: Receiver) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    await bk.finish_build(PIPELINE, 1)
    item = receiver.received[-1]
    assert item.headers["X-Buildkite-Token"] == WEBHOOK_TOKEN
    assert "X-Buildkite-Signature" not in item.headers
    assert receiver.authentic(item)


async def test_retry_outcome_emits_job_then_build_finished(
    bk: BuildkiteSandbox, api: BuildkiteApi, receiver: Receiver
) -> None:
    build = bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    bk.set_retry_outcome(AUDIT_KEY, state="passed")
    old = build["jobs"][0]["id"]
    new = (await api("PUT", f"/organizations/{ORG}/jobs/{old}/retry")).body["id"]
    await bk.flush()
    assert receiver.events() == ["job.finished", "build.finished"]
    job_event, build_event = (item.payload for item in receiver.received)
    assert job_event["job"]["id"] == new
    assert job_event["job"]["state"] == "passed"
    assert build_event["build"]["state"] == "passed"
    assert all(receiver.authentic(item) for item in receiver.received)


async def test_outcome_that_leaves_the_build_unfinished_sends_no_build_event(
    bk: BuildkiteSandbox, api: BuildkiteApi, receiver: Receiver
) -> None:
    build = bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job(), audit_job()])
    first, second = (job["id"] for job in build["jobs"])
    bk.set_retry_outcome(first, state="passed", after="on_demand")
    bk.set_retry_outcome(second, state="failed", exit_status=1, after="on_demand")
    new_first = (await api("PUT", f"/organizations/{ORG}/jobs/{first}/retry")).body["id"]
    new_second = (await api("PUT", f"/organizations/{ORG}/jobs/{second}/retry")).body["id"]
    await bk.complete_job(new_first)
    assert receiver.events() == ["job.finished"]
    await bk.complete_job(new_second)
    assert receiver.events() == ["job.finished", "job.finished", "build.finished"]
    assert receiver.received[-1].payload["build"]["state"] == "failed"


async def test_emit_any_event(bk: BuildkiteSandbox, receiver: Receiver) -> None:
    build = bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    await bk.emit("build.started", PIPELINE, 1)
    await bk.emit("job.started", PIPELINE, 1, job_id=build["jobs"][0]["id"])
    assert receiver.events() == ["build.started", "job.started"]
    assert "job" in receiver.received[1].payload


async def test_unfinished_build_cannot_be_finished(bk: BuildkiteSandbox) -> None:
    bk.create_build(
        PIPELINE, commit=SHA_A, branch="main", jobs=[JobSpec("a", "A", state="running")]
    )
    with pytest.raises(ValueError, match="finish its jobs first"):
        await bk.finish_build(PIPELINE, 1)


async def test_no_webhook_url_drops_events(bk: BuildkiteSandbox) -> None:
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    await bk.finish_build(PIPELINE, 1)
    assert bk.deliveries == []


async def test_unreachable_receiver_is_recorded(bk: BuildkiteSandbox) -> None:
    bk.webhook_url = "http://127.0.0.1:9/unreachable"
    bk.create_build(PIPELINE, commit=SHA_A, branch="main", jobs=[audit_job()])
    await bk.finish_build(PIPELINE, 1)
    assert [d.status for d in bk.deliveries] == [STATUS_UNREACHABLE, STATUS_UNREACHABLE]
    bk.reset_log()
    assert bk.deliveries == []
