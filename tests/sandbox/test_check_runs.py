"""Check runs: created by Apps, listed per commit, announced, counted as required checks."""

from __future__ import annotations

from typing import Any

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_check_runs import (
    ACTIONS_SLUG,
    CHECKS_READ_ONLY,
    CONCLUSION_MISSING,
    STALE_REFUSED,
)
from sandbox.github_server import GitHubSandbox
from sandbox.github_statuses import REQUIRED_EXPECTED, REQUIRED_FAILING

from .helpers import INSTALLATION_ID, REPO, RawApi, Receiver

BRANCH = "followup-bot/bump/flash-attention"
BUILD = "build / test (3.11)"
CI = "buildkite/ci"
ENABLE = """
mutation($id: ID!) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: SQUASH}) {
    pullRequest { number }
  }
}
"""


def grant_checks_write(sandbox: GitHubSandbox) -> None:
    # The App asks for checks: write (the routing check); said here for the reader.
    sandbox.installations[INSTALLATION_ID].permissions["checks"] = "write"


async def open_pull(sandbox: GitHubSandbox, gh: GitHubAPI) -> dict[str, Any]:
    sandbox.commit(REPO, {"cmake/deps.cmake": "GIT_TAG new\n"}, "bump", branch=BRANCH)
    pull: dict[str, Any] = await gh.post(
        f"/repos/{REPO}/pulls", data={"title": "Bump", "head": BRANCH, "base": "main"}
    )
    return pull


async def auto_merging_pull(sandbox: GitHubSandbox, gh: GitHubAPI) -> dict[str, Any]:
    sandbox.repo(REPO).allow_auto_merge = True
    pull = await open_pull(sandbox, gh)
    await gh.graphql(ENABLE, endpoint=f"{sandbox.base_url}/graphql", id=pull["node_id"])
    return pull


def check_run_deliveries(receiver: Receiver) -> list[dict[str, Any]]:
    return [r.payload for r in receiver.received if r.headers["X-GitHub-Event"] == "check_run"]


async def is_merged(gh: GitHubAPI, number: int) -> bool:
    merged: bool = (await gh.getitem(f"/repos/{REPO}/pulls/{number}"))["merged"]
    return merged


# -- over the REST API ---------------------------------------------------------------------


async def test_creating_needs_checks_write(sandbox: GitHubSandbox, raw: RawApi) -> None:
    sandbox.installations[INSTALLATION_ID].permissions["checks"] = "read"
    body = {"name": BUILD, "head_sha": sandbox.head(REPO)}
    refused = await raw("POST", f"/repos/{REPO}/check-runs", body)
    assert (refused.status, refused.body["message"]) == (403, CHECKS_READ_ONLY)
    assert sandbox.repo(REPO).check_runs == {}


async def test_create_get_update_and_their_webhooks(
    sandbox: GitHubSandbox, raw: RawApi, receiver: Receiver, gh: GitHubAPI
) -> None:
    grant_checks_write(sandbox)
    sha = sandbox.head(REPO)
    created = await raw(
        "POST",
        f"/repos/{REPO}/check-runs",
        {"name": BUILD, "head_sha": sha, "external_id": "job-7"},
    )
    assert created.status == 201
    run = created.body
    assert (run["status"], run["conclusion"], run["completed_at"]) == ("queued", None, None)
    assert run["started_at"] is not None
    assert (run["external_id"], run["app"]["slug"]) == ("job-7", sandbox.app_slug)
    assert run["details_url"] == run["app"]["html_url"]  # the App's homepage by default

    got = await gh.getitem(f"/repos/{REPO}/check-runs/{run['id']}")
    assert got == run
    assert (await raw("GET", f"/repos/{REPO}/check-runs/999999")).status == 404

    running = await gh.patch(
        f"/repos/{REPO}/check-runs/{run['id']}", data={"status": "in_progress"}
    )
    assert running["status"] == "in_progress"
    done = await gh.patch(
        f"/repos/{REPO}/check-runs/{run['id']}",
        data={"conclusion": "success", "output": {"title": "Tests", "summary": "all passed"}},
    )
    # A conclusion alone completes the run, as GitHub does.
    assert (done["status"], done["conclusion"]) == ("completed", "success")
    assert done["completed_at"] is not None
    assert (done["output"]["title"], done["output"]["summary"]) == ("Tests", "all passed")

    await sandbox.flush()
    deliveries = check_run_deliveries(receiver)
    assert [(d["action"], d["check_run"]["status"]) for d in deliveries] == [
        ("created", "queued"),
        ("completed", "completed"),
    ]
    assert deliveries[0]["check_run"]["check_suite"]["head_branch"] == "main"
    assert deliveries[1]["check_run"]["conclusion"] == "success"
    assert deliveries[1]["sender"]["login"] == sandbox.bot_user.login
    assert sandbox.violations == []


async def test_created_completed_sends_created_then_completed(
    sandbox: GitHubSandbox, raw: RawApi, receiver: Receiver
) -> None:
    grant_checks_write(sandbox)
    body = {"name": "lint", "head_sha": sandbox.head(REPO), "conclusion": "neutral"}
    created = await raw("POST", f"/repos/{REPO}/check-runs", body)
    assert (created.status, created.body["status"]) == (201, "completed")
    await sandbox.flush()
    assert [d["action"] for d in check_run_deliveries(receiver)] == ["created", "completed"]
    assert sandbox.violations == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"status": "completed"}, CONCLUSION_MISSING),
        ({"completed_at": "2024-01-01T00:00:00Z"}, CONCLUSION_MISSING),
        ({"conclusion": "stale"}, STALE_REFUSED),
    ],
)
async def test_documented_refusals(
    sandbox: GitHubSandbox, raw: RawApi, extra: dict[str, str], message: str
) -> None:
    grant_checks_write(sandbox)
    body = {"name": BUILD, "head_sha": sandbox.head(REPO), **extra}
    refused = await raw("POST", f"/repos/{REPO}/check-runs", body)
    assert (refused.status, refused.body["message"]) == (422, message)
    assert sandbox.repo(REPO).check_runs == {}


async def test_unknown_commit_and_out_of_contract_values_are_422(
    sandbox: GitHubSandbox, raw: RawApi
) -> None:
    grant_checks_write(sandbox)
    url = f"/repos/{REPO}/check-runs"
    unknown = await raw("POST", url, {"name": BUILD, "head_sha": "0" * 40})
    assert (unknown.status, unknown.body["message"]) == (
        422,
        f"No commit found for SHA: {'0' * 40}",
    )
    by_branch = await raw("POST", url, {"name": BUILD, "head_sha": "main"})
    assert by_branch.status == 422
    # Only GitHub Actions may set "waiting": the contract already refuses it on create.
    waiting = await raw("POST", url, {"name": BUILD, "head_sha": "main", "status": "waiting"})
    assert waiting.status == 422


async def test_an_app_updates_only_its_own_runs(
    sandbox: GitHubSandbox, raw: RawApi, gh: GitHubAPI
) -> None:
    grant_checks_write(sandbox)
    actions = sandbox.report_check_run(REPO, sandbox.head(REPO), BUILD)
    refused = await raw(
        "PATCH", f"/repos/{REPO}/check-runs/{actions['id']}", {"conclusion": "success"}
    )
    assert refused.status == 403
    assert "can only be modified by the GitHub App that created it" in refused.body["message"]
    assert (await gh.getitem(f"/repos/{REPO}/check-runs/{actions['id']}"))["status"] == "queued"


async def test_listing_latest_all_filters_and_pages(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi
) -> None:
    sha = sandbox.head(REPO)
    first = sandbox.report_check_run(REPO, sha, BUILD, conclusion="failure")
    rerun = sandbox.report_check_run(REPO, sha, BUILD, status="in_progress")
    lint = sandbox.report_check_run(REPO, sha, "lint", conclusion="success", app_slug="ci-bot")
    url = f"/repos/{REPO}/commits/main/check-runs"

    latest = await gh.getitem(url)
    assert latest["total_count"] == 2
    assert [r["id"] for r in latest["check_runs"]] == [lint["id"], rerun["id"]]
    every = await gh.getitem(f"{url}?filter=all")
    assert [r["id"] for r in every["check_runs"]] == [lint["id"], rerun["id"], first["id"]]
    named = await gh.getitem(f"{url}?filter=all&check_name={BUILD}")
    assert named["total_count"] == 2
    completed = await gh.getitem(f"{url}?status=completed")
    assert [r["name"] for r in completed["check_runs"]] == ["lint"]
    by_app = await gh.getitem(f"{url}?app_id={lint['app']['id']}")
    assert [r["app"]["slug"] for r in by_app["check_runs"]] == ["ci-bot"]

    page = await raw("GET", f"{url}?filter=all&per_page=2")
    assert page.body["total_count"] == 3
    assert len(page.body["check_runs"]) == 2
    assert 'rel="next"' in page.headers["Link"]
    runs = [r async for r in gh.getiter(f"{url}?filter=all&per_page=1", iterable_key="check_runs")]
    assert len(runs) == 3
    assert (await raw("GET", f"/repos/{REPO}/commits/nope/check-runs")).status == 404
    assert sandbox.violations == []


async def test_a_run_lists_the_open_pulls_at_its_commit(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    pull = await open_pull(sandbox, gh)
    run = sandbox.report_check_run(REPO, pull["head"]["sha"], BUILD)
    assert [(p["number"], p["head"]["ref"]) for p in run["pull_requests"]] == [
        (pull["number"], BRANCH)
    ]
    assert sandbox.violations == []


# -- the setup API -------------------------------------------------------------------------


async def test_report_and_update_emit_webhooks_as_github_actions(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    pull = await open_pull(sandbox, gh)
    head = pull["head"]["sha"]
    run = sandbox.report_check_run(REPO, head, BUILD, status="in_progress", title="Tests")
    assert (run["app"]["slug"], run["status"]) == (ACTIONS_SLUG, "in_progress")
    done = sandbox.update_check_run(REPO, run["id"], conclusion="failure", summary="2 failed")
    assert (done["status"], done["conclusion"]) == ("completed", "failure")
    assert done["output"] == {**run["output"], "summary": "2 failed"}

    await sandbox.flush()
    deliveries = check_run_deliveries(receiver)
    assert [d["action"] for d in deliveries] == ["created", "completed"]
    completed = deliveries[1]
    assert completed["sender"]["login"] == "github-actions[bot]"
    assert completed["check_run"]["app"]["slug"] == ACTIONS_SLUG
    assert completed["check_run"]["head_sha"] == head
    # The landing handler finds the pull through the suite's head branch.
    assert completed["check_run"]["check_suite"]["head_branch"] == BRANCH
    assert completed["check_run"]["check_suite"]["conclusion"] == "failure"
    assert completed["check_run"]["pull_requests"][0]["number"] == pull["number"]
    assert sandbox.violations == []


def test_setup_refusals_raise_value_error(sandbox: GitHubSandbox) -> None:
    sha = sandbox.head(REPO)
    with pytest.raises(ValueError, match="conclusion"):
        sandbox.report_check_run(REPO, sha, BUILD, status="completed")
    with pytest.raises(ValueError, match="stale"):
        sandbox.report_check_run(REPO, sha, BUILD, conclusion="stale")
    with pytest.raises(ValueError, match="Only GitHub Actions"):
        sandbox.report_check_run(REPO, sha, BUILD, status="waiting", app_slug="ci-bot")
    waiting = sandbox.report_check_run(REPO, sha, BUILD, status="waiting")
    assert waiting["status"] == "waiting"
    with pytest.raises(ValueError, match="check run 424242"):
        sandbox.update_check_run(REPO, 424242, conclusion="success")


# -- required checks and auto-merge --------------------------------------------------------


async def test_a_required_check_run_blocks_then_lets_an_auto_merge_through(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi, receiver: Receiver
) -> None:
    sandbox.require_checks(REPO, "main", [BUILD])
    pull = await auto_merging_pull(sandbox, gh)
    head, number = pull["head"]["sha"], pull["number"]
    merge_url = f"/repos/{REPO}/pulls/{number}/merge"

    run = sandbox.report_check_run(REPO, head, BUILD, status="in_progress")
    refused = await raw("PUT", merge_url, {"merge_method": "squash"})
    assert (refused.status, refused.body["message"]) == (
        405,
        REQUIRED_EXPECTED.format(context=BUILD),
    )
    sandbox.update_check_run(REPO, run["id"], conclusion="timed_out")
    failing = await raw("PUT", merge_url, {"merge_method": "squash"})
    assert failing.body["message"] == REQUIRED_FAILING.format(context=BUILD)
    assert not await is_merged(gh, number)

    # A re-run supersedes the failed one; its success completes the auto-merge.
    rerun = sandbox.report_check_run(REPO, head, BUILD)
    await sandbox.flush()
    receiver.received.clear()
    sandbox.update_check_run(REPO, rerun["id"], conclusion="success")
    await sandbox.flush()
    assert await is_merged(gh, number)
    assert receiver.events() == [
        ("check_run", "completed"),
        ("push", None),
        ("pull_request", "closed"),
    ]
    assert sandbox.violations == []


@pytest.mark.parametrize("conclusion", ["neutral", "skipped"])
async def test_neutral_and_skipped_satisfy_a_required_check(
    sandbox: GitHubSandbox, gh: GitHubAPI, conclusion: str
) -> None:
    sandbox.require_checks(REPO, "main", [BUILD])
    pull = await auto_merging_pull(sandbox, gh)
    sandbox.report_check_run(REPO, pull["head"]["sha"], BUILD, conclusion=conclusion)
    assert await is_merged(gh, pull["number"])


async def test_a_status_and_a_check_run_are_both_required(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    sandbox.require_checks(REPO, "main", [CI, BUILD])
    pull = await auto_merging_pull(sandbox, gh)
    head = pull["head"]["sha"]
    sandbox.report_check_run(REPO, head, BUILD, conclusion="success")
    assert not await is_merged(gh, pull["number"])
    pulled = await gh.getitem(f"/repos/{REPO}/pulls/{pull['number']}")
    assert pulled["mergeable_state"] == "blocked"
    sandbox.set_status(REPO, head, "success")
    assert await is_merged(gh, pull["number"])
    assert sandbox.violations == []


async def test_a_check_run_completed_over_the_api_completes_an_auto_merge(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    grant_checks_write(sandbox)
    sandbox.require_checks(REPO, "main", [BUILD])
    pull = await auto_merging_pull(sandbox, gh)
    run = await gh.post(
        f"/repos/{REPO}/check-runs", data={"name": BUILD, "head_sha": pull["head"]["sha"]}
    )
    assert not await is_merged(gh, pull["number"])
    await gh.patch(f"/repos/{REPO}/check-runs/{run['id']}", data={"conclusion": "success"})
    assert await is_merged(gh, pull["number"])
    assert sandbox.violations == []


async def test_a_failing_optional_check_run_makes_the_pull_unstable(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    sandbox.require_checks(REPO, "main", [CI])
    pull = await open_pull(sandbox, gh)
    head = pull["head"]["sha"]
    sandbox.set_status(REPO, head, "success")
    sandbox.report_check_run(REPO, head, "docs", conclusion="failure")
    pulled = await gh.getitem(f"/repos/{REPO}/pulls/{pull['number']}")
    assert pulled["mergeable_state"] == "unstable"
    sandbox.report_check_run(REPO, head, "docs", conclusion="success")
    pulled = await gh.getitem(f"/repos/{REPO}/pulls/{pull['number']}")
    assert pulled["mergeable_state"] == "clean"
