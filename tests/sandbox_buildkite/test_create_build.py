"""Buildkite's create-build call on the stand-in: the build it makes, its webhooks, its
refusals, and the bot's client making one (a lost answer included)."""

from __future__ import annotations

import aiohttp
import pytest

from bot.buildkite.client import BuildkiteClient, PullRequestRef
from bot.buildkite.transport import BuildkiteConnection
from bot.core.errors import TransientError
from sandbox.buildkite_routes_builds import BAD_ENV, CREATE_NEEDS
from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.buildkite_state import JobSpec

from ..sandbox.helpers import FakeClock
from .helpers import API_TOKEN, ORG, PIPELINE, SHA_A, BuildkiteApi, Receiver, api_path

ENV = {"FOLLOWUP_BOT_LANDING": "o/r#7@" + SHA_A}
BODY = {
    "commit": SHA_A,
    "branch": "followup-bot/bump/fa",
    "message": "Full CI",
    "env": ENV,
    "pull_request_id": 7,
    "pull_request_base_branch": "main",
}


async def test_a_build_is_made_as_asked_and_runs_one_passing_job(
    bk: BuildkiteSandbox, api: BuildkiteApi, receiver: Receiver
) -> None:
    answer = await api("POST", api_path("/builds"), BODY)
    await bk.flush()

    assert answer.status == 201
    build = answer.body
    assert (build["number"], build["state"], build["source"]) == (1, "passed", "api")
    assert (build["commit"], build["branch"], build["message"]) == (
        SHA_A,
        "followup-bot/bump/fa",
        "Full CI",
    )
    assert build["env"] == BODY["env"]
    assert build["pull_request"] == {
        "id": "7",
        "base": "main",
        "repository": "https://github.com/vllm-project/vllm.git",
    }
    assert [job["step_key"] for job in build["jobs"]] == ["pipeline-upload"]
    assert receiver.events() == ["build.scheduled", "job.finished", "build.finished"]
    listed = await api("GET", api_path("/builds"), params={"commit": SHA_A})
    assert [b["env"] for b in listed.body] == [BODY["env"]]


async def test_the_planned_jobs_run_and_an_unfinished_build_sends_no_finish(
    bk: BuildkiteSandbox, api: BuildkiteApi, receiver: Receiver
) -> None:
    bk.plan_builds(PIPELINE, [JobSpec("gpu", "GPU", state="running"), JobSpec("lint", "Lint")])
    fork = {**BODY, "pull_request_repository": "git://github.com/someone/vllm.git"}

    answer = await api("POST", api_path("/builds"), fork)
    await bk.flush()

    assert answer.body["state"] == "running"
    assert answer.body["pull_request"]["repository"] == "git://github.com/someone/vllm.git"
    assert [job["step_key"] for job in answer.body["jobs"]] == ["gpu", "lint"]
    assert receiver.events() == ["build.scheduled"]


async def test_a_build_without_a_pull_request_has_none(api: BuildkiteApi) -> None:
    answer = await api("POST", api_path("/builds"), {"commit": SHA_A, "branch": "main"})
    assert (answer.body["pull_request"], answer.body["message"], answer.body["env"]) == (
        None,
        "",
        {},
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"branch": "main"}, CREATE_NEEDS.format(field="Commit")),
        ({"commit": SHA_A, "branch": " "}, CREATE_NEEDS.format(field="Branch")),
        (None, CREATE_NEEDS.format(field="Commit")),
        ({"commit": SHA_A, "branch": "main", "env": {"A": 1}}, BAD_ENV),
        ({"commit": SHA_A, "branch": "main", "env": ["A"]}, BAD_ENV),
    ],
)
async def test_refusals(
    bk: BuildkiteSandbox, api: BuildkiteApi, body: object, message: str
) -> None:
    answer = await api("POST", api_path("/builds"), body)
    assert (answer.status, answer.body) == (422, {"message": message})
    assert bk.world.builds == []


async def test_an_unknown_pipeline_is_404(api: BuildkiteApi) -> None:
    answer = await api("POST", f"/organizations/{ORG}/pipelines/nope/builds", BODY)
    assert answer.status == 404


def test_builds_are_planned_for_a_known_pipeline_only(bk: BuildkiteSandbox) -> None:
    with pytest.raises(KeyError):
        bk.plan_builds("nope", [])


def test_a_test_build_can_be_dated(bk: BuildkiteSandbox, clock: FakeClock) -> None:
    made = bk.create_build(
        PIPELINE, commit=SHA_A, branch="main", jobs=[JobSpec("a", "A")], created_at=clock.now - 60
    )
    assert made["created_at"] == "2027-01-15T07:59:10.250Z"
    assert made["jobs"][0]["started_at"] == made["created_at"]


@pytest.fixture
def client(bk: BuildkiteSandbox, session: aiohttp.ClientSession) -> BuildkiteClient:
    connection = BuildkiteConnection(api_url=bk.base_url, token=API_TOKEN, timeout=10.0)
    return BuildkiteClient(session, connection)


async def test_the_bots_client_creates_a_build(
    bk: BuildkiteSandbox, client: BuildkiteClient
) -> None:
    made = await client.create_build(
        ORG,
        PIPELINE,
        commit=SHA_A,
        branch="followup-bot/bump/fa",
        message="Full CI",
        env=ENV,
        pull_request=PullRequestRef(7, "main"),
    )
    assert made["env"] == BODY["env"]
    [request] = [r for r in bk.requests if r.route == "builds.create"]
    assert request.body == BODY


async def test_a_lost_answer_is_not_sent_again(
    bk: BuildkiteSandbox, client: BuildkiteClient
) -> None:
    bk.faults.ghost_next(1, "/builds", method="POST")
    await client.builds(ORG, PIPELINE)  # a GET of the same path is not the planned fault

    with pytest.raises(TransientError):
        await client.create_build(ORG, PIPELINE, commit=SHA_A, branch="main", message="m")

    assert [r.status for r in bk.requests if r.route == "builds.create"] == [502]
    assert len(bk.world.builds) == 1  # made once, its answer lost: the caller looks for it
