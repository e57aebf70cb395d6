"""PyGithub, an independent client, drives the stand-in; the contract must see no problem.

PyGithub follows the ``url`` fields it gets back and refuses hosts other than its
base URL, so this also proves every URL the stand-in hands out points at itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

from github import InputGitTreeElement

from sandbox.github_server import GitHubSandbox

from .helpers import REPO, pygithub

BRANCH = "followup-bot/bump/pygithub"


def drive(base_url: str, token: str) -> dict[str, Any]:
    client = pygithub(base_url, token)
    repo = client.get_repo(REPO)
    main = repo.get_git_ref("heads/main")
    parent = repo.get_git_commit(main.object.sha)
    blob = repo.create_git_blob("GIT_TAG pygithub\n", "utf-8")
    tree = repo.create_git_tree(
        [InputGitTreeElement("cmake/deps.cmake", "100644", "blob", sha=blob.sha)],
        base_tree=repo.get_git_tree(parent.tree.sha),
    )
    commit = repo.create_git_commit("bump via PyGithub", tree, [parent])
    repo.create_git_ref(f"refs/heads/{BRANCH}", commit.sha)
    pull = repo.create_pull(base="main", head=BRANCH, title="Bump", body="why")
    listed = [p.number for p in repo.get_pulls(state="open", head=f"acme:{BRANCH}")]
    pull.edit(title="Bump (edited)")
    pull.create_issue_comment("a comment")
    pull.add_to_labels("ready")
    comparison = repo.compare("main", BRANCH)
    content = repo.get_contents("cmake/deps.cmake", ref=BRANCH)
    assert not isinstance(content, list)
    fetched = repo.get_pull(pull.number)
    merged = fetched.merge(merge_method="squash", sha=fetched.head.sha)
    return {
        "default_branch": repo.default_branch,
        "commit": commit.sha,
        "listed": listed,
        "number": pull.number,
        "title": fetched.title,
        "labels": [label.name for label in fetched.labels],
        "status": comparison.status,
        "ahead_by": comparison.ahead_by,
        "content": content.decoded_content.decode(),
        "merged": merged.merged,
        "merge_sha": merged.sha,
    }


async def test_pygithub_drives_the_stand_in(sandbox: GitHubSandbox, token: str) -> None:
    seen = await asyncio.to_thread(drive, sandbox.base_url, token)
    assert seen["default_branch"] == "main"
    assert seen["listed"] == [seen["number"]]
    assert seen["title"] == "Bump (edited)"
    assert seen["labels"] == ["ready"]
    assert (seen["status"], seen["ahead_by"]) == ("ahead", 1)
    assert seen["content"] == "GIT_TAG pygithub\n"
    assert seen["merged"] is True
    assert sandbox.head(REPO) == seen["merge_sha"]
    assert sandbox.read_file(REPO, "main", "cmake/deps.cmake") == "GIT_TAG pygithub\n"
    assert [c["body"] for c in sandbox.comments(REPO, seen["number"])] == ["a comment"]
    operations = {r.operation_id for r in sandbox.requests}
    assert {"issues/add-labels", "pulls/merge", "repos/compare-commits"} <= operations
    assert sandbox.violations == []
