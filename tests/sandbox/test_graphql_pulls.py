"""The stand-in's ``repository { pullRequests }`` query: shape, order, states, errors,
faults and the request log, and that it agrees with the REST listing it replaces."""

from __future__ import annotations

from typing import Any

import gidgethub
import pytest
from gidgethub import QueryError
from gidgethub.aiohttp import GitHubAPI

from bot.core.errors import PermanentError
from bot.github import changes, pull_states
from bot.github.changes import Repo
from sandbox.github_graphql_pulls import NO_PAGE_SIZE, PAGE_TOO_LARGE, REPOSITORY_NOT_FOUND
from sandbox.github_server import GitHubSandbox

from .helpers import REPO, FakeClock

BRANCH = "followup-bot/bump/flash-attention"
OTHER = "followup-bot/bump/cutlass"
ODD = 'followup-bot/bump/a"b$c{d}'  # legal in git, fatal if spliced into a document
QUERY = """
query($owner: String!, $name: String!, $head: String!) {
  repository(owner: $owner, name: $name) {
    pullRequests(headRefName: $head, first: 20, orderBy: {field: CREATED_AT, direction: DESC}) {
      totalCount
      nodes {
        number state headRefName headRefOid mergedAt closedAt createdAt title author { login }
      }
    }
  }
}
"""
UNPAGED = """
query($owner: String!, $name: String!) {
  repository(owner: $owner, name: $name) { pullRequests(headRefName: "x") { totalCount } }
}
"""
TOO_MANY = """
query($owner: String!, $name: String!) {
  repository(owner: $owner, name: $name) {
    pullRequests(headRefName: "x", first: 101) { totalCount }
  }
}
"""


class SandboxGraphQL(GitHubAPI):
    """gidgethub, with GraphQL sent to the stand-in rather than to the public GitHub."""

    def __init__(self, gh: GitHubAPI, sandbox: GitHubSandbox) -> None:
        super().__init__(gh._session, "sandbox-tests", oauth_token=gh.oauth_token)
        self.base_url = sandbox.base_url

    async def graphql(self, query: str, *, endpoint: str | None = None, **variables: Any) -> Any:
        return await super().graphql(query, endpoint=f"{self.base_url}/graphql", **variables)


def history(sandbox: GitHubSandbox, clock: FakeClock) -> tuple[int, int, int]:
    """On BRANCH: #closed (closed unmerged), #merged, then #open, a second apart; one PR
    on OTHER."""
    owner, _ = REPO.split("/")
    sandbox.commit(REPO, {"a.txt": "1\n"}, "one", branch=BRANCH)
    closed = int(sandbox.open_pull(REPO, head=BRANCH, title="Bump to aaa", by="alice")["number"])
    sandbox.close_pull(REPO, closed)
    clock.now += 1
    merged = int(sandbox.open_pull(REPO, head=BRANCH, title="Bump to bbb", by="bob")["number"])
    sandbox.merge_pull(REPO, merged)
    clock.now += 1
    sandbox.commit(REPO, {"a.txt": "3\n"}, "three", branch=BRANCH)
    opened = int(sandbox.open_pull(REPO, head=BRANCH, title="Bump to ccc", by=owner)["number"])
    sandbox.commit(REPO, {"b.txt": "1\n"}, "other", branch=OTHER)
    sandbox.open_pull(REPO, head=OTHER, title="Bump cutlass", by=owner)
    return closed, merged, opened


async def query(gh: GitHubAPI, sandbox: GitHubSandbox, document: str, **variables: Any) -> Any:
    return await gh.graphql(document, endpoint=f"{sandbox.base_url}/graphql", **variables)


async def test_pulls_of_a_branch_newest_first_with_states(
    sandbox: GitHubSandbox, gh: GitHubAPI, clock: FakeClock
) -> None:
    closed, merged, opened = history(sandbox, clock)
    owner, name = REPO.split("/")
    data = await query(gh, sandbox, QUERY, owner=owner, name=name, head=BRANCH)
    connection = data["repository"]["pullRequests"]
    nodes = connection["nodes"]
    assert connection["totalCount"] == 3
    assert [n["number"] for n in nodes] == [opened, merged, closed]
    assert [n["state"] for n in nodes] == ["OPEN", "MERGED", "CLOSED"]
    assert {n["headRefName"] for n in nodes} == {BRANCH}
    assert nodes[0]["headRefOid"] == sandbox.head(REPO, BRANCH)
    assert (nodes[0]["mergedAt"], nodes[0]["closedAt"]) == (None, None)
    assert nodes[1]["mergedAt"] is not None
    assert nodes[1]["closedAt"] is not None
    assert nodes[2]["mergedAt"] is None
    assert nodes[2]["closedAt"] is not None
    assert nodes[0]["createdAt"] > nodes[2]["createdAt"]
    assert [n["author"]["login"] for n in nodes[1:]] == ["bob", "alice"]
    assert sandbox.requests[-1].operation_id == "graphql"
    assert sandbox.violations == []


async def test_the_query_agrees_with_the_rest_listing(
    sandbox: GitHubSandbox, gh: GitHubAPI, clock: FakeClock
) -> None:
    history(sandbox, clock)
    sandbox.commit(REPO, {"c.txt": "1\n"}, "odd", branch=ODD)
    sandbox.open_pull(REPO, head=ODD, title="Odd", by="alice")
    repo = Repo.parse(REPO)
    answer = await pull_states.pulls_by_branch(
        SandboxGraphQL(gh, sandbox), repo, [BRANCH, OTHER, ODD, "followup-bot/bump/none"]
    )
    for branch, pulls in answer.items():
        listed = await changes.pulls_for_branch(gh, repo, branch)
        assert pulls == [rest_subset(pr) for pr in listed]
    assert answer["followup-bot/bump/none"] == []
    assert len(answer[ODD]) == 1


def rest_subset(pr: dict[str, Any]) -> dict[str, Any]:
    """The part of a REST pull the pin flow reads."""
    subset = {key: pr[key] for key in ("number", "state", "title", "merged_at")}
    return subset | {"head": {"ref": pr["head"]["ref"], "sha": pr["head"]["sha"]}}


async def test_an_unknown_repository_is_githubs_not_found(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    with pytest.raises(QueryError) as caught:
        await query(gh, sandbox, QUERY, owner="acme", name="missing", head=BRANCH)
    response = caught.value.response
    assert response["data"] == {"repository": None}
    (error,) = response["errors"]
    assert error["type"] == "NOT_FOUND"
    assert error["path"] == ["repository"]
    assert error["message"] == REPOSITORY_NOT_FOUND.format(owner="acme", name="missing")
    with pytest.raises(PermanentError):  # as REST's 404 for the listing: not retried
        await pull_states.pulls_by_branch(
            SandboxGraphQL(gh, sandbox), Repo.parse("acme/missing"), [BRANCH]
        )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (UNPAGED, NO_PAGE_SIZE.format(field="pullRequests")),
        (TOO_MANY, PAGE_TOO_LARGE.format(count=101, field="pullRequests", which="first")),
    ],
)
async def test_a_connection_must_be_paged(
    sandbox: GitHubSandbox, gh: GitHubAPI, document: str, message: str
) -> None:
    owner, name = REPO.split("/")
    with pytest.raises(QueryError) as caught:
        await query(gh, sandbox, document, owner=owner, name=name)
    assert [e["message"] for e in caught.value.response["errors"]] == [message]


async def test_faults_and_the_log_apply_to_the_query(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    owner, name = REPO.split("/")
    sandbox.faults.fail_next(1, status=502, operation="graphql")
    with pytest.raises(gidgethub.GitHubBroken):
        await query(gh, sandbox, QUERY, owner=owner, name=name, head=BRANCH)
    sandbox.faults.rate_limit_next(1, retry_after=7, operation="graphql")
    with pytest.raises(gidgethub.BadGraphQLRequest) as limited:
        await query(gh, sandbox, QUERY, owner=owner, name=name, head=BRANCH)
    assert int(limited.value.status_code) == 403
    logged = [(r.operation_id, r.status) for r in sandbox.requests[-2:]]
    assert logged == [("graphql", 502), ("graphql", 403)]
