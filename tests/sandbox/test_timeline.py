"""An issue's timeline: the label events, with who and when, checked against the contract."""

from __future__ import annotations

from typing import Any

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import REPO, FakeClock, RawApi, Receiver

BRANCH = "followup-bot/bump/fa"


async def timeline(gh: GitHubAPI, number: int) -> list[tuple[str, str, str]]:
    return [
        (event["event"], event["label"]["name"], event["actor"]["login"])
        async for event in gh.getiter(f"/repos/{REPO}/issues/{number}/timeline")
    ]


async def test_labels_put_on_and_taken_off_by_the_api(
    sandbox: GitHubSandbox, gh: GitHubAPI, clock: FakeClock
) -> None:
    await gh.post(f"/repos/{REPO}/issues", data={"title": "t", "labels": ["bug"]})
    clock.now += 5
    await gh.post(f"/repos/{REPO}/issues/1/labels", data={"labels": ["ready", "bug"]})
    await gh.delete(f"/repos/{REPO}/issues/1/labels/bug")
    await gh.patch(f"/repos/{REPO}/issues/1", data={"labels": ["ready", "ci"]})

    bot = "followup-bot[bot]"
    assert await timeline(gh, 1) == [
        ("labeled", "bug", bot),
        ("labeled", "ready", bot),
        ("unlabeled", "bug", bot),
        ("labeled", "ci", bot),
    ]
    [first, second, *_] = await gh.getitem(f"/repos/{REPO}/issues/1/timeline")
    assert second["created_at"] != first["created_at"]  # five seconds later
    assert first["label"] == {"name": "bug", "color": "ededed"}
    assert first["commit_id"] is None
    assert sandbox.violations == []


async def test_a_person_labels_a_pull_request_at_a_given_time(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    sandbox.commit(REPO, {"cmake/deps.cmake": "GIT_TAG new\n"}, "bump", branch=BRANCH)
    pull: dict[str, Any] = sandbox.open_pull(
        REPO, head=BRANCH, title="Bump", by="maint", labels=["ci"]
    )
    number = int(pull["number"])

    sandbox.label_pull(REPO, number, "ready", by="maint", at=1_786_017_600.0)
    sandbox.label_pull(REPO, number, "ready", by="maint")  # already on: nothing happens
    await sandbox.flush()

    events = await gh.getitem(f"/repos/{REPO}/issues/{number}/timeline")
    # Oldest first: the dated label comes before the one the PR was opened with.
    assert [(e["event"], e["label"]["name"], e["actor"]["login"]) for e in events] == [
        ("labeled", "ready", "maint"),
        ("labeled", "ci", "maint"),
    ]
    assert events[0]["created_at"] == "2026-08-06T12:00:00Z"
    labeled = [r for r in receiver.received if r.payload.get("action") == "labeled"]
    assert [r.payload["label"]["name"] for r in labeled] == ["ready"]
    assert sandbox.violations == []


async def test_a_missing_issue_has_no_timeline(raw: RawApi, sandbox: GitHubSandbox) -> None:
    assert (await raw("GET", f"/repos/{REPO}/issues/99/timeline")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/issues/x/timeline")).status == 422


async def test_only_a_pull_request_is_labelled_by_the_setup_call(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    await gh.post(f"/repos/{REPO}/issues", data={"title": "t"})
    with pytest.raises(ValueError, match="not a pull request"):
        sandbox.label_pull(REPO, 1, "ready", by="maint")
