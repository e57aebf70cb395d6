"""Landing features of the stand-in: commit statuses, required checks, auto-merge (GraphQL)."""

from __future__ import annotations

from typing import Any

import pytest
from gidgethub import QueryError
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_graphql import (
    AUTO_MERGE_NOT_ALLOWED,
    IN_STATUS,
    NOT_PROTECTED,
    REQUIRES_AUTHENTICATION,
)
from sandbox.github_server import GitHubSandbox
from sandbox.github_statuses import REQUIRED_EXPECTED, REQUIRED_FAILING

from .helpers import REPO, RawApi, Receiver

BRANCH = "followup-bot/bump/flash-attention"
CI = "buildkite/ci"
ENABLE = """
mutation($id: ID!, $method: PullRequestMergeMethod, $head: GitObjectID) {
  enablePullRequestAutoMerge(
    input: {pullRequestId: $id, mergeMethod: $method, expectedHeadOid: $head}
  ) {
    pullRequest { number autoMergeRequest { enabledAt mergeMethod } }
  }
}
"""
DISABLE = """
mutation($id: ID!) {
  disablePullRequestAutoMerge(input: {pullRequestId: $id}) {
    pullRequest { number autoMergeRequest { mergeMethod } }
  }
}
"""


async def open_pull(sandbox: GitHubSandbox, gh: GitHubAPI) -> dict[str, Any]:
    sandbox.commit(REPO, {"cmake/deps.cmake": "GIT_TAG new\n"}, "bump", branch=BRANCH)
    pull: dict[str, Any] = await gh.post(
        f"/repos/{REPO}/pulls", data={"title": "Bump", "head": BRANCH, "base": "main"}
    )
    return pull


async def graphql(gh: GitHubAPI, sandbox: GitHubSandbox, query: str, **variables: Any) -> Any:
    return await gh.graphql(query, endpoint=f"{sandbox.base_url}/graphql", **variables)


async def state_of(gh: GitHubAPI, number: int) -> str:
    pull = await gh.getitem(f"/repos/{REPO}/pulls/{number}")
    value: str = pull["mergeable_state"]
    return value


# -- commit statuses -------------------------------------------------------------------------


async def test_combined_status_follows_the_newest_status_per_context(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    sha = sandbox.head(REPO)
    empty = await gh.getitem(f"/repos/{REPO}/commits/main/status")
    assert (empty["state"], empty["total_count"], empty["sha"]) == ("pending", 0, sha)

    sandbox.set_status(REPO, sha, "pending")
    sandbox.set_status(REPO, sha, "success", context="lint", target_url="http://ci/1")
    combined = await gh.getitem(f"/repos/{REPO}/commits/{sha}/status")
    assert combined["state"] == "pending"
    assert {s["context"]: s["state"] for s in combined["statuses"]} == {
        CI: "pending",
        "lint": "success",
    }

    sandbox.set_status(REPO, sha, "success", description="passed")
    combined = await gh.getitem(f"/repos/{REPO}/commits/main/status")
    assert (combined["state"], combined["total_count"]) == ("success", 2)
    assert combined["statuses"][0]["description"] == "passed"

    sandbox.set_status(REPO, sha, "error", context="lint")
    assert (await gh.getitem(f"/repos/{REPO}/commits/main/status"))["state"] == "failure"
    sandbox.set_status(REPO, sha, "failure", context="lint")
    assert (await gh.getitem(f"/repos/{REPO}/commits/main/status"))["state"] == "failure"
    assert sandbox.violations == []


async def test_each_status_emits_a_valid_status_webhook(
    sandbox: GitHubSandbox, receiver: Receiver
) -> None:
    sha = sandbox.head(REPO)
    sandbox.set_status(REPO, sha, "failure", target_url="http://ci/7", description="1 job failed")
    await sandbox.flush()
    statuses = [r.payload for r in receiver.received if r.headers["X-GitHub-Event"] == "status"]
    assert len(statuses) == 1
    payload = statuses[0]
    assert (payload["sha"], payload["state"], payload["context"]) == (sha, "failure", CI)
    assert (payload["target_url"], payload["description"]) == ("http://ci/7", "1 job failed")
    assert [b["name"] for b in payload["branches"]] == ["main"]
    assert payload["commit"]["sha"] == sha
    assert sandbox.violations == []


def test_set_status_refuses_an_unknown_state(sandbox: GitHubSandbox) -> None:
    with pytest.raises(ValueError, match="unknown commit status state"):
        sandbox.set_status(REPO, sandbox.head(REPO), "passed")


# -- required checks and mergeable_state -----------------------------------------------------


async def test_required_check_blocks_merge_until_it_passes(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi
) -> None:
    sandbox.require_checks(REPO, "main", [CI])
    pull = await open_pull(sandbox, gh)
    head = pull["head"]["sha"]
    merge_url = f"/repos/{REPO}/pulls/{pull['number']}/merge"

    refused = await raw("PUT", merge_url, {"merge_method": "squash"})
    assert refused.status == 405
    assert refused.body["message"] == REQUIRED_EXPECTED.format(context=CI)
    assert await state_of(gh, pull["number"]) == "blocked"

    sandbox.set_status(REPO, head, "failure")
    failing = await raw("PUT", merge_url, {"merge_method": "squash"})
    assert (failing.status, failing.body["message"]) == (
        405,
        REQUIRED_FAILING.format(context=CI),
    )

    sandbox.set_status(REPO, head, "success")
    assert await state_of(gh, pull["number"]) == "clean"
    merged = await raw("PUT", merge_url, {"merge_method": "squash", "sha": head})
    assert (merged.status, merged.body["merged"]) == (200, True)
    assert sandbox.violations == []


async def test_mergeable_state_unstable_and_dirty(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    sandbox.require_checks(REPO, "main", [CI])
    pull = await open_pull(sandbox, gh)
    head = pull["head"]["sha"]
    sandbox.set_status(REPO, head, "success")
    sandbox.set_status(REPO, head, "failure", context="optional/docs")
    assert await state_of(gh, pull["number"]) == "unstable"

    sandbox.commit(REPO, {"cmake/deps.cmake": "GIT_TAG other\n"}, "conflicting change")
    assert await state_of(gh, pull["number"]) == "dirty"
    assert sandbox.violations == []


# -- auto-merge over GraphQL -----------------------------------------------------------------


async def test_auto_merge_lands_when_the_required_check_passes(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    sandbox.repo(REPO).allow_auto_merge = True
    sandbox.require_checks(REPO, "main", [CI])
    pull = await open_pull(sandbox, gh)
    assert (await gh.getitem(f"/repos/{REPO}"))["allow_auto_merge"] is True

    data = await graphql(
        gh, sandbox, ENABLE, id=pull["node_id"], method="SQUASH", head=pull["head"]["sha"]
    )
    enabled = data["enablePullRequestAutoMerge"]["pullRequest"]
    assert enabled["number"] == pull["number"]
    assert enabled["autoMergeRequest"]["mergeMethod"] == "SQUASH"
    shown = await gh.getitem(f"/repos/{REPO}/pulls/{pull['number']}")
    assert shown["auto_merge"]["merge_method"] == "squash"
    assert shown["auto_merge"]["enabled_by"]["login"] == sandbox.bot_user.login

    await sandbox.flush()
    receiver.received.clear()
    sandbox.set_status(REPO, pull["head"]["sha"], "success")
    await sandbox.flush()

    merged = await gh.getitem(f"/repos/{REPO}/pulls/{pull['number']}")
    assert (merged["state"], merged["merged"]) == ("closed", True)
    assert merged["merged_by"]["login"] == sandbox.bot_user.login
    assert sandbox.head(REPO) == merged["merge_commit_sha"]
    assert receiver.events() == [("status", None), ("push", None), ("pull_request", "closed")]
    closed = receiver.received[-1].payload
    assert closed["pull_request"]["merged"] is True
    assert closed["sender"]["login"] == sandbox.bot_user.login
    assert sandbox.violations == []


async def test_auto_merge_refused_where_the_repository_does_not_allow_it(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    sandbox.require_checks(REPO, "main", [CI])
    pull = await open_pull(sandbox, gh)
    with pytest.raises(QueryError) as refused:
        await graphql(gh, sandbox, ENABLE, id=pull["node_id"], method="MERGE", head=None)
    error = refused.value.response["errors"][0]
    assert (error["message"], error["type"]) == (AUTO_MERGE_NOT_ALLOWED, "UNPROCESSABLE")
    assert error["path"] == ["enablePullRequestAutoMerge"]
    assert (await gh.getitem(f"/repos/{REPO}/pulls/{pull['number']}"))["auto_merge"] is None


async def test_auto_merge_refused_on_a_clean_pull_and_without_protection(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    sandbox.repo(REPO).allow_auto_merge = True
    pull = await open_pull(sandbox, gh)
    with pytest.raises(QueryError) as unprotected:
        await graphql(gh, sandbox, ENABLE, id=pull["node_id"], method=None, head=None)
    assert str(unprotected.value) == NOT_PROTECTED

    sandbox.require_checks(REPO, "main", [CI])
    sandbox.set_status(REPO, pull["head"]["sha"], "success")
    with pytest.raises(QueryError) as clean:
        await graphql(gh, sandbox, ENABLE, id=pull["node_id"], method=None, head=None)
    assert str(clean.value) == IN_STATUS.format(state="clean")


async def test_expected_head_mismatch_is_refused(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    sandbox.repo(REPO).allow_auto_merge = True
    sandbox.require_checks(REPO, "main", [CI])
    pull = await open_pull(sandbox, gh)
    stale = pull["head"]["sha"]
    sandbox.commit(REPO, {"notes.txt": "more\n"}, "another commit", branch=BRANCH)
    with pytest.raises(QueryError) as refused:
        await graphql(gh, sandbox, ENABLE, id=pull["node_id"], method="MERGE", head=stale)
    assert "expectedHeadOid" in str(refused.value)
    assert sandbox.repo(REPO).issues[pull["number"]].pull.auto_merge is None  # type: ignore[union-attr]


async def test_malformed_and_unknown_documents_are_rejected_with_200(
    sandbox: GitHubSandbox, raw: RawApi
) -> None:
    for query in (
        "mutation { enablePullRequestAutoMerge(input: {",
        'mutation { mergePullRequest(input: {pullRequestId: "x"}) { clientMutationId } }',
        'mutation { enablePullRequestAutoMerge(input: {pullRequestId: "x"}) { nope } }',
    ):
        answer = await raw("POST", "/graphql", {"query": query})
        assert answer.status == 200
        assert "data" not in answer.body
        assert answer.body["errors"][0]["message"]
    missing = await raw("POST", "/graphql", {"variables": {}})
    assert (missing.status, len(missing.body["errors"])) == (200, 1)


async def test_graphql_needs_an_installation_token(sandbox: GitHubSandbox, raw: RawApi) -> None:
    body = {"query": '{ node(id: "x") { number } }'}
    anonymous = await raw("POST", "/graphql", body, auth="Basic abc")
    assert (anonymous.status, anonymous.body["message"]) == (401, REQUIRES_AUTHENTICATION)
    bad = await raw("POST", "/graphql", body, auth="bearer not-a-token")
    assert bad.status == 401
    ok = await raw("POST", "/graphql", body, auth=f"Bearer {raw.token}")
    assert (ok.status, ok.body) == (200, {"data": {"node": None}})


async def test_a_push_by_a_non_writer_disables_auto_merge_a_writer_keeps_it(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    sandbox.repo(REPO).allow_auto_merge = True
    sandbox.require_checks(REPO, "main", [CI])
    sandbox.set_permission(REPO, "writer", "write")
    sandbox.set_permission(REPO, "reader", "read")
    pull = await open_pull(sandbox, gh)
    await graphql(gh, sandbox, ENABLE, id=pull["node_id"], method="MERGE", head=None)

    sandbox.commit(REPO, {"a.txt": "a\n"}, "writer's fix", branch=BRANCH, pushed_by="writer")
    assert (await gh.getitem(f"/repos/{REPO}/pulls/1"))["auto_merge"] is not None
    sandbox.commit(REPO, {"b.txt": "b\n"}, "reader's fix", branch=BRANCH, pushed_by="reader")
    assert (await gh.getitem(f"/repos/{REPO}/pulls/1"))["auto_merge"] is None


async def test_disable_auto_merge(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    sandbox.repo(REPO).allow_auto_merge = True
    sandbox.require_checks(REPO, "main", [CI])
    pull = await open_pull(sandbox, gh)
    await graphql(gh, sandbox, ENABLE, id=pull["node_id"], method="REBASE", head=None)
    data = await graphql(gh, sandbox, DISABLE, id=pull["node_id"])
    assert data["disablePullRequestAutoMerge"]["pullRequest"]["autoMergeRequest"] is None
    sandbox.set_status(REPO, pull["head"]["sha"], "success")
    assert (await gh.getitem(f"/repos/{REPO}/pulls/1"))["state"] == "open"


async def test_posted_status_is_listed_and_completes_an_auto_merge(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi
) -> None:
    sandbox.repo(REPO).allow_auto_merge = True
    sandbox.require_checks(REPO, "main", [CI])
    pull = await open_pull(sandbox, gh)
    head = pull["head"]["sha"]
    await graphql(gh, sandbox, ENABLE, id=pull["node_id"], method="MERGE", head=head)

    unknown = await raw("POST", f"/repos/{REPO}/statuses/{'0' * 40}", {"state": "success"})
    assert unknown.status == 422
    posted = await raw("POST", f"/repos/{REPO}/statuses/{head}", {"state": "pending"})
    assert (posted.status, posted.body["context"]) == (201, "default")
    assert (await gh.getitem(f"/repos/{REPO}/pulls/1"))["state"] == "open"

    done = await gh.post(f"/repos/{REPO}/statuses/{head}", data={"state": "success", "context": CI})
    assert done["state"] == "success"
    merged = await gh.getitem(f"/repos/{REPO}/pulls/1")
    assert merged["merged"] is True
    assert len(sandbox.store.rev_list(REPO, f"{merged['merge_commit_sha']}^@", limit=5)) > 1
    combined = await gh.getitem(f"/repos/{REPO}/commits/{head}/status")
    # "default" is still pending: non-required statuses do not hold auto-merge back.
    assert (combined["state"], combined["total_count"]) == ("pending", 2)
    assert sandbox.violations == []
