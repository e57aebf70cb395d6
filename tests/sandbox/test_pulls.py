"""Pull requests: create, list by head, update, merge, follow the head branch."""

from __future__ import annotations

from typing import Any

from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import REPO, RawApi

BRANCH = "followup-bot/bump/flash-attention"


async def open_pull(
    sandbox: GitHubSandbox, gh: GitHubAPI, files: dict[str, str | None]
) -> dict[str, Any]:
    sandbox.commit(REPO, files, "bump flash-attention", branch=BRANCH)
    pull: dict[str, Any] = await gh.post(
        f"/repos/{REPO}/pulls",
        data={"title": "Bump flash-attention", "head": BRANCH, "base": "main", "body": "why"},
    )
    return pull


async def test_create_list_get_update(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    pull = await open_pull(sandbox, gh, {"cmake/deps.cmake": "GIT_TAG new\n"})
    assert pull["number"] == 1
    assert pull["head"]["sha"] == sandbox.head(REPO, BRANCH)
    assert pull["url"].startswith(sandbox.base_url)

    found = await gh.getitem(f"/repos/{REPO}/pulls?head=acme:{BRANCH}&state=open")
    assert [p["number"] for p in found] == [1]
    assert await gh.getitem(f"/repos/{REPO}/pulls?head=acme:other") == []

    again = await raw(
        "POST", f"/repos/{REPO}/pulls", {"title": "again", "head": BRANCH, "base": "main"}
    )
    assert again.status == 422
    assert "already exists" in again.body["errors"][0]["message"]

    full = await gh.getitem(f"/repos/{REPO}/pulls/1")
    assert (full["mergeable"], full["commits"], full["changed_files"]) == (True, 1, 1)

    edited = await gh.patch(f"/repos/{REPO}/pulls/1", data={"title": "Bump FA", "body": "new"})
    assert (edited["title"], edited["body"]) == ("Bump FA", "new")
    closed = await gh.patch(f"/repos/{REPO}/pulls/1", data={"state": "closed"})
    assert closed["state"] == "closed"
    assert await gh.getitem(f"/repos/{REPO}/pulls?head=acme:{BRANCH}") == []
    reopened = await gh.patch(f"/repos/{REPO}/pulls/1", data={"state": "open"})
    assert reopened["state"] == "open"
    assert sandbox.violations == []


async def test_create_refuses_empty_and_unknown_branches(
    sandbox: GitHubSandbox, raw: RawApi
) -> None:
    sandbox.set_ref(REPO, "empty", sandbox.head(REPO))
    no_commits = await raw(
        "POST", f"/repos/{REPO}/pulls", {"title": "t", "head": "empty", "base": "main"}
    )
    assert no_commits.status == 422
    assert "No commits between" in no_commits.body["errors"][0]["message"]
    unknown = await raw(
        "POST", f"/repos/{REPO}/pulls", {"title": "t", "head": "nope", "base": "main"}
    )
    assert unknown.status == 422
    assert sandbox.violations == []


async def test_head_sha_follows_the_branch(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    await open_pull(sandbox, gh, {"a.txt": "1"})
    moved = sandbox.commit(REPO, {"a.txt": "2"}, "more", branch=BRANCH)
    assert (await gh.getitem(f"/repos/{REPO}/pulls/1"))["head"]["sha"] == moved
    listed = await gh.getitem(f"/repos/{REPO}/pulls")
    assert listed[0]["head"]["sha"] == moved


async def test_stats_follow_the_head_and_the_base(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    """Stats read once are read again after either branch moves, and after a close."""

    async def stats() -> tuple[object, ...]:
        pull = await gh.getitem(f"/repos/{REPO}/pulls/1")
        return (pull["mergeable"], pull["commits"], pull["changed_files"], pull["additions"])

    await open_pull(sandbox, gh, {"a.txt": "1\n"})
    assert await stats() == await stats() == (True, 1, 1, 1)
    sandbox.commit(REPO, {"b.txt": "2\n3\n"}, "more", branch=BRANCH)
    assert await stats() == (True, 2, 2, 3)
    sandbox.commit(REPO, {"a.txt": "from main\n"}, "conflicting")
    assert await stats() == (False, 2, 2, 3)
    await gh.patch(f"/repos/{REPO}/pulls/1", data={"state": "closed"})
    assert await stats() == (None, 2, 2, 3)
    assert sandbox.violations == []


async def test_issue_and_pull_numbers_share_a_sequence(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    issue = await gh.post(f"/repos/{REPO}/issues", data={"title": "an issue"})
    pull = await open_pull(sandbox, gh, {"a.txt": "1"})
    assert (issue["number"], pull["number"]) == (1, 2)
    both = await gh.getitem(f"/repos/{REPO}/issues?state=all")
    assert [i["number"] for i in both] == [2, 1]
    assert "pull_request" in both[0]
    assert sandbox.violations == []


async def test_merge_squash_updates_base(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi
) -> None:
    pull = await open_pull(sandbox, gh, {"cmake/deps.cmake": "GIT_TAG new\n"})
    stale = await raw(
        "PUT", f"/repos/{REPO}/pulls/1/merge", {"merge_method": "squash", "sha": "0" * 40}
    )
    assert stale.status == 409
    merged = await gh.put(
        f"/repos/{REPO}/pulls/1/merge", data={"merge_method": "squash", "sha": pull["head"]["sha"]}
    )
    assert merged["merged"] is True
    assert sandbox.head(REPO) == merged["sha"]
    assert sandbox.read_file(REPO, "main", "cmake/deps.cmake") == "GIT_TAG new\n"
    after = await gh.getitem(f"/repos/{REPO}/pulls/1")
    assert (after["state"], after["merged"], after["merge_commit_sha"]) == (
        "closed",
        True,
        merged["sha"],
    )
    again = await raw("PUT", f"/repos/{REPO}/pulls/1/merge", {"merge_method": "squash"})
    assert again.status == 405
    assert sandbox.violations == []


async def test_merge_methods_merge_and_rebase(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    await open_pull(sandbox, gh, {"a.txt": "1"})
    merged = await gh.put(f"/repos/{REPO}/pulls/1/merge", data={"merge_method": "merge"})
    parents = sandbox.store.read_commit(REPO, merged["sha"]).parents
    assert len(parents) == 2
    sandbox.commit(REPO, {"b.txt": "1"}, "b", branch="rebased")
    second = await gh.post(
        f"/repos/{REPO}/pulls", data={"title": "b", "head": "rebased", "base": "main"}
    )
    rebased = await gh.put(
        f"/repos/{REPO}/pulls/{second['number']}/merge", data={"merge_method": "rebase"}
    )
    assert len(sandbox.store.read_commit(REPO, rebased["sha"]).parents) == 1
    assert sandbox.read_file(REPO, "main", "b.txt") == "1"
    assert sandbox.violations == []


async def test_merge_conflict_is_405(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    await open_pull(sandbox, gh, {"README.md": "from the branch\n"})
    sandbox.commit(REPO, {"README.md": "from main\n"}, "conflicting")
    pull = await gh.getitem(f"/repos/{REPO}/pulls/1")
    assert (pull["mergeable"], pull["mergeable_state"]) == (False, "dirty")
    answer = await raw("PUT", f"/repos/{REPO}/pulls/1/merge", {"merge_method": "squash"})
    assert answer.status == 405
    assert answer.body["message"] == "Pull Request is not mergeable"
    assert sandbox.violations == []


async def test_reviews_and_files(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    pull = await open_pull(sandbox, gh, {"a.txt": "1\n", "README.md": None})
    sandbox.set_permission(REPO, "maint", "maintain")
    sandbox.submit_review(REPO, 1, "maint")
    reviews = await gh.getitem(f"/repos/{REPO}/pulls/1/reviews")
    assert [(r["user"]["login"], r["state"], r["commit_id"]) for r in reviews] == [
        ("maint", "APPROVED", pull["head"]["sha"])
    ]
    files = await gh.getitem(f"/repos/{REPO}/pulls/1/files")
    assert sorted((f["filename"], f["status"]) for f in files) == [
        ("README.md", "removed"),
        ("a.txt", "added"),
    ]
    assert sandbox.violations == []


async def test_setup_merge_pull_squashes(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    await open_pull(sandbox, gh, {"a.txt": "1"})
    sha = sandbox.merge_pull(REPO, 1)
    assert sandbox.head(REPO) == sha
    [pull] = sandbox.pulls(REPO)
    assert pull["merged"] is True
    assert pull["merged_by"]["login"] == "maintainer"
