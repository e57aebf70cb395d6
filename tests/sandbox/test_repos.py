"""Repository views: contents, branches, commits, compare, permissions, ETags."""

from __future__ import annotations

import base64

from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import FILES, REPO, RawApi


async def test_get_content_by_ref(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    old = sandbox.head(REPO)
    sandbox.commit(REPO, {"cmake/deps.cmake": "GIT_TAG new\n"}, "bump", branch="topic")
    on_main = await gh.getitem(f"/repos/{REPO}/contents/cmake/deps.cmake")
    assert base64.b64decode(on_main["content"]).decode() == FILES["cmake/deps.cmake"]
    on_topic = await gh.getitem(f"/repos/{REPO}/contents/cmake/deps.cmake?ref=topic")
    assert base64.b64decode(on_topic["content"]).decode() == "GIT_TAG new\n"
    by_sha = await gh.getitem(f"/repos/{REPO}/contents/cmake/deps.cmake?ref={old}")
    assert by_sha["sha"] == on_main["sha"]
    assert (await raw("GET", f"/repos/{REPO}/contents/missing.txt")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/contents/README.md?ref=nope")).status == 404
    assert sandbox.violations == []


async def test_get_branch_and_commit(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    sha = sandbox.commit(REPO, {"a.txt": "1\n2\n"}, "add a")
    branch = await gh.getitem(f"/repos/{REPO}/branches/main")
    assert branch["commit"]["sha"] == sha
    commit = await gh.getitem(f"/repos/{REPO}/commits/{sha}")
    assert [f["filename"] for f in commit["files"]] == ["a.txt"]
    assert commit["files"][0]["additions"] == 2
    assert commit["commit"]["message"].strip() == "add a"
    assert (await raw("GET", f"/repos/{REPO}/branches/nope")).status == 404
    assert sandbox.violations == []


async def test_list_commits_paginates_with_link(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi
) -> None:
    for n in range(4):
        sandbox.commit(REPO, {f"f{n}.txt": str(n)}, f"commit {n}")
    first = await raw("GET", f"/repos/{REPO}/commits?per_page=2")
    assert [c["commit"]["message"].strip() for c in first.body] == ["commit 3", "commit 2"]
    assert 'rel="next"' in first.headers["Link"]
    every = [c async for c in gh.getiter(f"/repos/{REPO}/commits?per_page=2")]
    assert len(every) == 5
    only_f1 = await gh.getitem(f"/repos/{REPO}/commits?path=f1.txt")
    assert [c["commit"]["message"].strip() for c in only_f1] == ["commit 1"]
    assert sandbox.violations == []


async def test_compare_statuses(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    base = sandbox.head(REPO)
    ahead_sha = sandbox.commit(REPO, {"x.txt": "x"}, "ahead", branch="topic")
    same = await gh.getitem(f"/repos/{REPO}/compare/main...main")
    assert (same["status"], same["ahead_by"], same["behind_by"]) == ("identical", 0, 0)
    ahead = await gh.getitem(f"/repos/{REPO}/compare/main...topic")
    assert (ahead["status"], ahead["ahead_by"], ahead["total_commits"]) == ("ahead", 1, 1)
    assert [c["sha"] for c in ahead["commits"]] == [ahead_sha]
    assert ahead["merge_base_commit"]["sha"] == base
    assert [f["filename"] for f in ahead["files"]] == ["x.txt"]
    behind = await gh.getitem(f"/repos/{REPO}/compare/topic...main")
    assert (behind["status"], behind["behind_by"]) == ("behind", 1)

    # A force-push that rewrites main makes the two sides diverge.
    sandbox.commit(REPO, {"y.txt": "y"}, "other work", branch="rewrite")
    sandbox.set_ref(REPO, "main", sandbox.head(REPO, "rewrite"))
    diverged = await gh.getitem(f"/repos/{REPO}/compare/main...topic")
    assert (diverged["status"], diverged["ahead_by"], diverged["behind_by"]) == ("diverged", 1, 1)
    by_sha = await gh.getitem(f"/repos/{REPO}/compare/{base}...{ahead_sha}")
    assert by_sha["status"] == "ahead"
    assert (await raw("GET", f"/repos/{REPO}/compare/main...nope")).status == 404
    assert sandbox.violations == []


async def test_collaborator_permission(sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi) -> None:
    sandbox.set_permission(REPO, "maint", "maintain")
    sandbox.set_permission(REPO, "reader", "read")
    maint = await gh.getitem(f"/repos/{REPO}/collaborators/maint/permission")
    assert (maint["permission"], maint["role_name"]) == ("write", "maintain")
    reader = await gh.getitem(f"/repos/{REPO}/collaborators/reader/permission")
    assert reader["permission"] == "read"
    owner = await gh.getitem(f"/repos/{REPO}/collaborators/acme/permission")
    assert owner["permission"] == "admin"
    assert (await raw("GET", f"/repos/{REPO}/collaborators/ghost/permission")).status == 404
    assert sandbox.violations == []


async def test_status_and_checks_are_empty(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    status = await gh.getitem(f"/repos/{REPO}/commits/main/status")
    assert (status["state"], status["total_count"], status["sha"]) == (
        "pending",
        0,
        sandbox.head(REPO),
    )
    checks = await gh.getitem(f"/repos/{REPO}/commits/main/check-runs")
    assert checks == {"total_count": 0, "check_runs": []}
    assert sandbox.violations == []


async def test_etag_304_does_not_count(sandbox: GitHubSandbox, raw: RawApi) -> None:
    first = await raw("GET", f"/repos/{REPO}")
    etag = first.headers["ETag"]
    remaining = int(first.headers["x-ratelimit-remaining"])
    again = await raw("GET", f"/repos/{REPO}", headers={"If-None-Match": etag})
    assert again.status == 304
    assert again.body is None
    assert int(again.headers["x-ratelimit-remaining"]) == remaining
    assert sandbox.requests[-1].conditional
    third = await raw("GET", f"/repos/{REPO}")
    assert int(third.headers["x-ratelimit-remaining"]) == remaining - 1
    assert third.headers["x-ratelimit-limit"] == "5000"
    assert third.headers["x-ratelimit-resource"] == "core"
    sandbox.commit(REPO, {"z": "z"}, "changes the repo's pushed_at? no: content changes")
    changed = await raw("GET", f"/repos/{REPO}/branches/main", headers={"If-None-Match": etag})
    assert changed.status == 200
    assert sandbox.violations == []


async def test_unknown_route_is_404_and_a_violation(sandbox: GitHubSandbox, raw: RawApi) -> None:
    answer = await raw("GET", f"/repos/{REPO}/nonsense")
    assert answer.status == 404
    assert answer.body["message"] == "Not Found"
    assert len(sandbox.violations) == 1


async def test_invalid_request_body_is_422_and_a_violation(
    sandbox: GitHubSandbox, raw: RawApi
) -> None:
    answer = await raw("POST", f"/repos/{REPO}/git/commits", {"message": "no tree"})
    assert answer.status == 422
    assert sandbox.violations


async def test_compare_pages_commits_oldest_first_with_files_on_page_one(
    sandbox: GitHubSandbox, raw: RawApi
) -> None:
    base = sandbox.head(REPO)
    for n in range(5):
        sandbox.commit(REPO, {f"p{n}.txt": str(n)}, f"commit {n}")
    url = f"/repos/{REPO}/compare/{base}...main"
    first = await raw("GET", f"{url}?per_page=2")
    assert [c["commit"]["message"].strip() for c in first.body["commits"]] == [
        "commit 0",
        "commit 1",
    ]
    assert first.body["total_commits"] == 5
    assert len(first.body["files"]) == 5
    assert 'rel="next"' in first.headers["Link"]
    assert "page=3" in first.headers["Link"]
    last = await raw("GET", f"{url}?per_page=2&page=3")
    assert [c["commit"]["message"].strip() for c in last.body["commits"]] == ["commit 4"]
    assert last.body["files"] == []  # the comparison's files come with the first page only
    assert 'rel="prev"' in last.headers["Link"]
    whole = await raw("GET", url)
    assert len(whole.body["commits"]) == 5
    assert "Link" not in whole.headers
    assert sandbox.violations == []
