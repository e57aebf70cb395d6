"""Dismissing a pull request review: over the API, in the setup API, and its webhook."""

from __future__ import annotations

from typing import Any

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import REPO, RawApi, Receiver

BRANCH = "followup-bot/bump/flash-attention"


async def open_pull(sandbox: GitHubSandbox, gh: GitHubAPI) -> dict[str, Any]:
    sandbox.commit(REPO, {"cmake/deps.cmake": "GIT_TAG new\n"}, "bump", branch=BRANCH)
    pull: dict[str, Any] = await gh.post(
        f"/repos/{REPO}/pulls", data={"title": "Bump", "head": BRANCH, "base": "main"}
    )
    return pull


def review_deliveries(receiver: Receiver) -> list[dict[str, Any]]:
    return [
        r.payload for r in receiver.received if r.headers["X-GitHub-Event"] == "pull_request_review"
    ]


async def test_dismissal_over_the_api(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi, receiver: Receiver
) -> None:
    pull = await open_pull(sandbox, gh)
    sandbox.set_permission(REPO, "maint", "maintain")
    review = sandbox.submit_review(REPO, pull["number"], "maint")
    url = f"/repos/{REPO}/pulls/{pull['number']}/reviews/{review['id']}/dismissals"

    dismissed = await gh.put(url, data={"message": "stale approval", "event": "DISMISS"})
    assert (dismissed["id"], dismissed["state"]) == (review["id"], "DISMISSED")
    listed = await gh.getitem(f"/repos/{REPO}/pulls/{pull['number']}/reviews")
    assert [(r["id"], r["state"]) for r in listed] == [(review["id"], "DISMISSED")]

    again = await raw("PUT", url, {"message": "again"})
    assert (again.status, again.body["message"]) == (422, "Validation Failed")
    assert again.body["errors"] == ["Can not dismiss a dismissed pull request review"]
    missing = f"/repos/{REPO}/pulls/{pull['number']}/reviews/999999/dismissals"
    assert (await raw("PUT", missing, {"message": "x"})).status == 404
    assert (await raw("PUT", url, {"event": "DISMISS"})).status == 422  # message is required

    await sandbox.flush()
    deliveries = review_deliveries(receiver)
    assert [d["action"] for d in deliveries] == ["submitted", "dismissed"]
    payload = deliveries[1]
    assert (payload["review"]["id"], payload["review"]["state"]) == (review["id"], "dismissed")
    assert payload["review"]["user"]["login"] == "maint"
    assert payload["sender"]["login"] == sandbox.bot_user.login
    assert payload["pull_request"]["number"] == pull["number"]
    assert "organization" not in payload
    # The one request sent out of contract on purpose (no message) is the only violation.
    assert sandbox.violations
    assert all("pulls/dismiss-review request body" in v for v in sandbox.violations)


async def test_only_approvals_and_change_requests_can_be_dismissed(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi
) -> None:
    pull = await open_pull(sandbox, gh)
    comment = sandbox.submit_review(REPO, pull["number"], "someone", state="COMMENTED")
    url = f"/repos/{REPO}/pulls/{pull['number']}/reviews/{comment['id']}/dismissals"
    refused = await raw("PUT", url, {"message": "no"})
    assert refused.status == 422
    assert refused.body["errors"] == ["Can not dismiss a commented pull request review"]
    changes = sandbox.submit_review(REPO, pull["number"], "someone", state="CHANGES_REQUESTED")
    url = f"/repos/{REPO}/pulls/{pull['number']}/reviews/{changes['id']}/dismissals"
    assert (await raw("PUT", url, {"message": "addressed"})).status == 200
    assert sandbox.violations == []


async def test_setup_dismissal_needs_write_access(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    pull = await open_pull(sandbox, gh)
    sandbox.set_permission(REPO, "maint", "maintain")
    sandbox.set_permission(REPO, "reader", "read")
    review = sandbox.submit_review(REPO, pull["number"], "maint")
    with pytest.raises(ValueError, match="no write access"):
        sandbox.dismiss_review(REPO, pull["number"], review["id"], "no", by="reader")

    dismissed = sandbox.dismiss_review(REPO, pull["number"], review["id"], "stale", by="maint")
    assert dismissed["state"] == "DISMISSED"
    record = sandbox.repo(REPO).issues[pull["number"]].pull
    assert record is not None
    assert record.reviews[0].dismissal_message == "stale"
    with pytest.raises(ValueError, match="Can not dismiss a dismissed"):
        sandbox.dismiss_review(REPO, pull["number"], review["id"], "again")

    await sandbox.flush()
    dismissal = review_deliveries(receiver)[-1]
    assert (dismissal["action"], dismissal["sender"]["login"]) == ("dismissed", "maint")
    assert sandbox.violations == []
