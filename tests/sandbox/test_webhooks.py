"""Webhooks the stand-in emits: signed like GitHub's, valid against the schemas, in order."""

from __future__ import annotations

import hashlib
import hmac

from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import INSTALLATION_ID, REPO, SECRET, Receiver

BRANCH = "followup-bot/bump/x"


def assert_signed(receiver: Receiver) -> None:
    for delivery in receiver.received:
        digest = hmac.new(SECRET.encode(), delivery.body, hashlib.sha256).hexdigest()
        assert delivery.headers["X-Hub-Signature-256"] == f"sha256={digest}"
        sha1 = hmac.new(SECRET.encode(), delivery.body, hashlib.sha1).hexdigest()
        assert delivery.headers["X-Hub-Signature"] == f"sha1={sha1}"
        assert delivery.headers["User-Agent"].startswith("GitHub-Hookshot/")
        assert delivery.headers["X-GitHub-Delivery"]
        assert delivery.payload["installation"]["id"] == INSTALLATION_ID


async def test_push_and_pull_request_lifecycle(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    main = sandbox.head(REPO)
    await gh.post(f"/repos/{REPO}/git/refs", data={"ref": f"refs/heads/{BRANCH}", "sha": main})
    sha = await sandbox.push_commit(REPO, {"a.txt": "1"}, "work", branch=BRANCH)
    pull = await gh.post(
        f"/repos/{REPO}/pulls", data={"title": "t", "head": BRANCH, "base": "main"}
    )
    await sandbox.push_commit(REPO, {"a.txt": "2"}, "more", branch=BRANCH)
    await gh.patch(f"/repos/{REPO}/pulls/{pull['number']}", data={"title": "t2"})
    await gh.post(f"/repos/{REPO}/issues/{pull['number']}/labels", data=["ready"])
    sandbox.submit_review(REPO, pull["number"], "maint")
    await gh.put(f"/repos/{REPO}/pulls/{pull['number']}/merge", data={"merge_method": "squash"})
    await sandbox.flush()

    assert receiver.events() == [
        ("push", None),
        ("push", None),
        ("pull_request", "opened"),
        ("push", None),
        ("pull_request", "synchronize"),
        ("pull_request", "edited"),
        ("pull_request", "labeled"),
        ("pull_request_review", "submitted"),
        ("push", None),
        ("pull_request", "closed"),
    ]
    created, pushed = receiver.received[0].payload, receiver.received[1].payload
    assert (created["created"], created["ref"]) == (True, f"refs/heads/{BRANCH}")
    assert pushed["after"] == sha
    assert [c["id"] for c in pushed["commits"]] == [sha]
    assert pushed["commits"][0]["added"] == ["a.txt"]
    assert pushed["repository"]["full_name"] == REPO
    review = receiver.received[7].payload["review"]
    assert review["state"] == "approved"
    closed = receiver.received[-1].payload["pull_request"]
    assert closed["merged"] is True
    assert_signed(receiver)
    assert [d.status for d in sandbox.deliveries] == [202] * len(receiver.received)
    assert sandbox.violations == []


async def test_comment_events_on_a_pull(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    sandbox.commit(REPO, {"a.txt": "1"}, "work", branch=BRANCH)
    pull = await gh.post(
        f"/repos/{REPO}/pulls", data={"title": "t", "head": BRANCH, "base": "main"}
    )
    sandbox.comment_as(REPO, pull["number"], "maint", "@bot retry-flaky")
    mine = await gh.post(f"/repos/{REPO}/issues/{pull['number']}/comments", data={"body": "ok"})
    await gh.patch(f"/repos/{REPO}/issues/comments/{mine['id']}", data={"body": "done"})
    await sandbox.flush()
    comments = [
        r.payload for r in receiver.received if r.headers["X-GitHub-Event"] == "issue_comment"
    ]
    assert [c["action"] for c in comments] == ["created", "created", "edited"]
    assert comments[0]["comment"]["user"]["login"] == "maint"
    assert "pull_request" in comments[0]["issue"]
    assert comments[2]["changes"] == {"body": {"from": "ok"}}
    assert sandbox.violations == []


async def test_deleting_the_head_branch_closes_the_pull(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    sandbox.commit(REPO, {"a.txt": "1"}, "work", branch=BRANCH)
    await gh.post(f"/repos/{REPO}/pulls", data={"title": "t", "head": BRANCH, "base": "main"})
    await gh.delete(f"/repos/{REPO}/git/refs/heads/{BRANCH}")
    await sandbox.flush()
    assert receiver.events()[-2:] == [("push", None), ("pull_request", "closed")]
    assert receiver.received[-2].payload["deleted"] is True
    assert sandbox.pulls(REPO)[0]["state"] == "closed"
    assert sandbox.violations == []


async def test_no_deliveries_without_installation_or_url(
    sandbox: GitHubSandbox, receiver: Receiver
) -> None:
    sandbox.create_repo("acme/uninstalled", files={"a": "b"})
    sandbox.commit("acme/uninstalled", {"a": "c"}, "change")
    await sandbox.flush()
    assert receiver.received == []
    sandbox.webhook_url = None
    sandbox.commit(REPO, {"a": "c"}, "change")
    await sandbox.flush()
    assert receiver.received == []


async def test_deliver_and_push_payload(sandbox: GitHubSandbox, receiver: Receiver) -> None:
    before = sandbox.head(REPO)
    after = sandbox.commit(REPO, {"a": "1"}, "one")
    await sandbox.flush()
    receiver.received.clear()
    payload = sandbox.push_payload(REPO, ref="refs/heads/main", before=before, after=after)
    status = await sandbox.deliver("push", payload, delivery_id="fixed-id")
    assert status == 202
    assert receiver.received[0].headers["X-GitHub-Delivery"] == "fixed-id"
    assert receiver.received[0].payload["head_commit"]["id"] == after
    assert sandbox.deliveries[-1].delivery_id == "fixed-id"
    assert sandbox.violations == []


async def test_invalid_payload_raises_in_strict_mode(
    sandbox: GitHubSandbox, receiver: Receiver
) -> None:
    import pytest

    from sandbox.github_webhooks import WebhookViolation

    with pytest.raises(WebhookViolation):
        await sandbox.deliver("push", {"ref": 1})
    assert sandbox.violations
    assert receiver.received == []


async def test_deliveries_record_repo_and_payload(
    sandbox: GitHubSandbox, receiver: Receiver
) -> None:
    await sandbox.push_commit(REPO, {"a": "1"}, "one")
    [delivery] = sandbox.deliveries
    assert (delivery.event, delivery.repo, delivery.action) == ("push", REPO, None)
    # Redelivering the recorded payload with its id is what GitHub's "Redeliver" does.
    assert await sandbox.deliver("push", delivery.payload, delivery_id=delivery.delivery_id) == 202
    assert receiver.received[0].body == receiver.received[1].body
    assert receiver.received[1].headers["X-GitHub-Delivery"] == delivery.delivery_id
