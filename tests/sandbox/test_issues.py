"""Issues, comments, labels and reactions."""

from __future__ import annotations

from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import REPO, RawApi


async def test_issue_lifecycle(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    issue = await gh.post(
        f"/repos/{REPO}/issues", data={"title": "t", "body": "b", "labels": ["bug"]}
    )
    assert [label["name"] for label in issue["labels"]] == ["bug"]
    got = await gh.getitem(f"/repos/{REPO}/issues/{issue['number']}")
    assert got["title"] == "t"
    closed = await gh.patch(f"/repos/{REPO}/issues/1", data={"state": "closed", "title": "t2"})
    assert (closed["state"], closed["title"]) == ("closed", "t2")
    assert await gh.getitem(f"/repos/{REPO}/issues") == []
    assert (await raw("POST", f"/repos/{REPO}/issues", {"title": ""})).status == 422
    assert (await raw("GET", f"/repos/{REPO}/issues/99")).status == 404
    assert sandbox.violations == []


async def test_comments(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    await gh.post(f"/repos/{REPO}/issues", data={"title": "t"})
    comment = await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "hello"})
    assert comment["user"]["login"] == "followup-bot[bot]"
    updated = await gh.patch(
        f"/repos/{REPO}/issues/comments/{comment['id']}", data={"body": "hello again"}
    )
    assert updated["body"] == "hello again"
    listed = await gh.getitem(f"/repos/{REPO}/issues/1/comments")
    assert [c["body"] for c in listed] == ["hello again"]
    assert [c["body"] for c in sandbox.comments(REPO, 1)] == ["hello again"]
    assert (await raw("PATCH", f"/repos/{REPO}/issues/comments/999", {"body": "x"})).status == 404
    assert sandbox.violations == []


async def test_labels_accept_bare_array_and_object(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi
) -> None:
    await gh.post(f"/repos/{REPO}/issues", data={"title": "t"})
    bare = await raw("POST", f"/repos/{REPO}/issues/1/labels", ["ready"])
    assert [label["name"] for label in bare.body] == ["ready"]
    wrapped = await gh.post(f"/repos/{REPO}/issues/1/labels", data={"labels": ["ci", "ready"]})
    assert [label["name"] for label in wrapped] == ["ready", "ci"]
    remaining = await raw("DELETE", f"/repos/{REPO}/issues/1/labels/ready")
    assert [label["name"] for label in remaining.body] == ["ci"]
    assert (await raw("DELETE", f"/repos/{REPO}/issues/1/labels/ready")).status == 404
    assert sandbox.violations == []


async def test_reactions_201_then_200(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    await gh.post(f"/repos/{REPO}/issues", data={"title": "t"})
    comment = sandbox.comment_as(REPO, 1, "maint", "@bot help")
    path = f"/repos/{REPO}/issues/comments/{comment['id']}/reactions"
    first = await raw("POST", path, {"content": "eyes"})
    second = await raw("POST", path, {"content": "eyes"})
    assert (first.status, second.status) == (201, 200)
    assert first.body["id"] == second.body["id"]
    assert (await raw("POST", path, {"content": "nope"})).status == 422
    assert sandbox.violations == [
        v for v in sandbox.violations if "reactions/create-for-issue-comment request" in v
    ]


async def test_rate_limit_endpoint(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    limits = await gh.getitem("/rate_limit")
    assert limits["resources"]["core"]["limit"] == 5000
    assert sandbox.violations == []
