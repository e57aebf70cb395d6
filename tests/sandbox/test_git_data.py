"""Blobs, trees, commits and refs made over HTTP are real git objects."""

from __future__ import annotations

import base64
import subprocess

import gidgethub
import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import REPO, RawApi


def git(sandbox: GitHubSandbox, *args: str) -> str:
    path = sandbox.store.path(REPO)
    done = subprocess.run(["git", "--git-dir", str(path), *args], capture_output=True, check=True)
    return done.stdout.decode()


async def make_commit(gh: GitHubAPI, files: dict[str, str | None], parent: str) -> str:
    """The bot's one-commit-many-files dance through the Git Data API."""
    base = await gh.getitem(f"/repos/{REPO}/git/commits/{parent}")
    entries = []
    for path, text in files.items():
        if text is None:
            entries.append({"path": path, "mode": "100644", "type": "blob", "sha": None})
            continue
        blob = await gh.post(
            f"/repos/{REPO}/git/blobs", data={"content": text, "encoding": "utf-8"}
        )
        entries.append({"path": path, "mode": "100644", "type": "blob", "sha": blob["sha"]})
    tree = await gh.post(
        f"/repos/{REPO}/git/trees", data={"base_tree": base["tree"]["sha"], "tree": entries}
    )
    commit = await gh.post(
        f"/repos/{REPO}/git/commits",
        data={"message": "bump", "tree": tree["sha"], "parents": [parent]},
    )
    sha: str = commit["sha"]
    return sha


async def test_blob_tree_commit_ref_round_trip(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    main = sandbox.head(REPO)
    blob = await gh.post(
        f"/repos/{REPO}/git/blobs",
        data={"content": base64.b64encode(b"\x00binary\xff").decode(), "encoding": "base64"},
    )
    assert git(sandbox, "cat-file", "-t", blob["sha"]).strip() == "blob"
    assert blob["url"].startswith(sandbox.base_url)

    sha = await make_commit(
        gh,
        {"cmake/deps.cmake": "GIT_TAG def\n", "new/deep/file.txt": "x\n", "README.md": None},
        main,
    )
    assert git(sandbox, "cat-file", "-t", sha).strip() == "commit"
    assert git(sandbox, "show", f"{sha}:cmake/deps.cmake") == "GIT_TAG def\n"
    assert git(sandbox, "show", f"{sha}:new/deep/file.txt") == "x\n"
    assert "README.md" not in git(sandbox, "ls-tree", "-r", "--name-only", sha)
    assert git(sandbox, "rev-parse", f"{sha}^").strip() == main
    # The App's commits are authored by its bot account unless told otherwise.
    assert "followup-bot[bot]" in git(sandbox, "log", "-1", "--format=%an <%ae>", sha)

    created = await gh.post(
        f"/repos/{REPO}/git/refs", data={"ref": "refs/heads/followup-bot/bump/x", "sha": sha}
    )
    assert created["object"]["sha"] == sha
    assert sandbox.head(REPO, "followup-bot/bump/x") == sha
    fetched = await gh.getitem(f"/repos/{REPO}/git/ref/heads/followup-bot%2Fbump%2Fx")
    assert fetched["object"]["sha"] == sha
    commit = await gh.getitem(f"/repos/{REPO}/git/commits/{sha}")
    assert commit["parents"][0]["sha"] == main
    assert commit["message"] == "bump"
    tree = await gh.getitem(f"/repos/{REPO}/git/trees/{commit['tree']['sha']}?recursive=1")
    assert {e["path"] for e in tree["tree"]} >= {"cmake/deps.cmake", "new/deep/file.txt"}
    assert sandbox.violations == []


async def test_tree_entry_with_inline_content_and_explicit_author(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    main = sandbox.head(REPO)
    tree = await gh.post(
        f"/repos/{REPO}/git/trees",
        data={"tree": [{"path": "only.txt", "mode": "100644", "type": "blob", "content": "hi"}]},
    )
    commit = await gh.post(
        f"/repos/{REPO}/git/commits",
        data={
            "message": "root",
            "tree": tree["sha"],
            "parents": [main],
            "author": {
                "name": "Grace",
                "email": "grace@example.com",
                "date": "2024-05-01T12:00:00Z",
            },
        },
    )
    assert commit["author"] == {
        "name": "Grace",
        "email": "grace@example.com",
        "date": "2024-05-01T12:00:00Z",
    }
    assert git(sandbox, "ls-tree", "--name-only", commit["sha"]).split() == ["only.txt"]
    assert sandbox.violations == []


async def test_create_ref_that_exists_is_422(sandbox: GitHubSandbox, raw: RawApi) -> None:
    answer = await raw(
        "POST", f"/repos/{REPO}/git/refs", {"ref": "refs/heads/main", "sha": sandbox.head(REPO)}
    )
    assert answer.status == 422
    assert answer.body["message"] == "Reference already exists"
    bad_name = await raw(
        "POST", f"/repos/{REPO}/git/refs", {"ref": "main", "sha": sandbox.head(REPO)}
    )
    assert bad_name.status == 422
    missing = await raw("POST", f"/repos/{REPO}/git/refs", {"ref": "refs/heads/x", "sha": "1" * 40})
    assert missing.status == 422
    assert sandbox.violations == []


async def test_update_ref_refuses_non_fast_forward_unless_forced(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi
) -> None:
    first = sandbox.head(REPO)
    second = sandbox.commit(REPO, {"a.txt": "1"}, "second")
    sandbox.commit(REPO, {"b.txt": "1"}, "side", branch="side")
    side_from_first = await make_commit(gh, {"c.txt": "c"}, first)

    ff = await raw(
        "PATCH", f"/repos/{REPO}/git/refs/heads/side", {"sha": sandbox.head(REPO, "side")}
    )
    assert ff.status == 200  # same sha: nothing to do, still fine

    refused = await raw("PATCH", f"/repos/{REPO}/git/refs/heads/main", {"sha": side_from_first})
    assert refused.status == 422
    assert refused.body["message"] == "Update is not a fast forward"
    assert sandbox.head(REPO) == second

    forced = await raw(
        "PATCH", f"/repos/{REPO}/git/refs/heads/main", {"sha": side_from_first, "force": True}
    )
    assert forced.status == 200
    assert sandbox.head(REPO) == side_from_first

    missing = await raw("PATCH", f"/repos/{REPO}/git/refs/heads/nope", {"sha": second})
    assert missing.status == 422
    assert sandbox.violations == []


async def test_delete_ref(sandbox: GitHubSandbox, raw: RawApi) -> None:
    sandbox.commit(REPO, {"b.txt": "1"}, "side", branch="side")
    assert (await raw("DELETE", f"/repos/{REPO}/git/refs/heads/side")).status == 204
    assert (await raw("GET", f"/repos/{REPO}/git/ref/heads/side")).status == 404
    assert (await raw("DELETE", f"/repos/{REPO}/git/refs/heads/side")).status == 422
    assert sandbox.violations == []


async def test_invalid_shas_are_refused(sandbox: GitHubSandbox, raw: RawApi) -> None:
    assert (await raw("GET", f"/repos/{REPO}/git/commits/{'f' * 40}")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/git/commits/zzz")).status == 404
    bad_tree = await raw(
        "POST", f"/repos/{REPO}/git/commits", {"message": "m", "tree": "e" * 40, "parents": []}
    )
    assert bad_tree.status == 422
    tree_sha = (await raw("GET", f"/repos/{REPO}/git/commits/{sandbox.head(REPO)}")).body["tree"][
        "sha"
    ]
    bad_parent = await raw(
        "POST",
        f"/repos/{REPO}/git/commits",
        {"message": "m", "tree": tree_sha, "parents": ["d" * 40]},
    )
    assert bad_parent.status == 422
    bad_entry = await raw(
        "POST",
        f"/repos/{REPO}/git/trees",
        {"tree": [{"path": "a", "mode": "100644", "type": "blob", "sha": "c" * 40}]},
    )
    assert bad_entry.status == 422
    assert sandbox.violations == []


async def test_a_blob_is_read_by_its_sha_and_nothing_else_is(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    sha = sandbox.commit(REPO, {"tools/x.sh": "REF=1\n"}, "add x")
    blob = (await gh.getitem(f"/repos/{REPO}/contents/tools/x.sh?ref={sha}"))["sha"]
    got = await gh.getitem(f"/repos/{REPO}/git/blobs/{blob}")
    assert (got["sha"], got["encoding"], got["size"]) == (blob, "base64", 6)
    assert base64.b64decode(got["content"]) == b"REF=1\n"
    for other in (sha, "0" * 40, "main"):
        with pytest.raises(gidgethub.BadRequest) as missing:
            await gh.getitem(f"/repos/{REPO}/git/blobs/{other}")
        assert missing.value.status_code == 404
    assert sandbox.violations == []
