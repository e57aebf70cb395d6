"""``repository { pullRequests(...) }`` of the GitHub stand-in's GraphQL endpoint.

A repository's pull requests as GitHub's GraphQL API lists them: filtered by head
branch name and state, ordered by an ``IssueOrder`` (creation time by default, oldest
first, as GitHub's default order is), at most ``first`` (or the last ``last``) of them.
A repository the caller cannot see is GitHub's ``NOT_FOUND`` error with ``null`` data,
and a connection asked for without ``first``/``last``, or for more than 100 nodes, is
refused with GitHub's wording.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphql import GraphQLError

from sandbox.github_json_base import JSON, iso
from sandbox.github_state import Issue, Repo

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox

REPOSITORY_NOT_FOUND = "Could not resolve to a Repository with the name '{owner}/{name}'."
NO_PAGE_SIZE = (
    "You must provide a `first` or `last` value to properly paginate the `{field}` connection."
)
PAGE_TOO_LARGE = (
    "Requesting {count} records on the `{field}` connection exceeds the `{which}` limit "
    "of 100 records."
)
MAX_PAGE = 100
STATE_NAMES = {"OPEN", "CLOSED", "MERGED"}
ORDER_KEYS = {
    "CREATED_AT": lambda issue: (issue.created_at, issue.number),
    "UPDATED_AT": lambda issue: (issue.updated_at, issue.number),
    "COMMENTS": lambda issue: (len(issue.comment_ids), issue.number),
}


class TypedError(GraphQLError):
    """An error GitHub reports with a ``type`` next to its message."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message, extensions={"type": kind})


def pull_fields(sandbox: GitHubSandbox, repo: Repo, issue: Issue) -> JSON:
    """The fields of a ``PullRequest`` that need no git (the mutations add their own)."""
    pull = issue.pull
    assert pull is not None
    return {
        "id": sandbox.json.pull(repo, issue)["node_id"],
        "databaseId": issue.id,
        "number": issue.number,
        "state": pull_state(issue),
        "merged": pull.merged,
        "title": issue.title,
        "headRefName": pull.head_ref,
        "headRefOid": pull.head_sha,
        "baseRefName": pull.base_ref,
        "isCrossRepository": False,  # the stand-in has no forks
        "createdAt": iso(issue.created_at),
        "closedAt": iso(issue.closed_at) if issue.closed_at else None,
        "mergedAt": iso(pull.merged_at) if pull.merged_at else None,
        # GraphQL names a Bot by its slug: "followup-bot", not REST's "followup-bot[bot]".
        "author": {"login": issue.user.login.removesuffix("[bot]")},
    }


def pull_state(issue: Issue) -> str:
    assert issue.pull is not None
    return "MERGED" if issue.pull.merged else "OPEN" if issue.state == "open" else "CLOSED"


class RepositoryResolver:
    """``Query.repository`` and its ``pullRequests`` connection."""

    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    def repository(self, info: Any, owner: str, name: str, **_ignored: Any) -> JSON:
        repo = self.sb.repos.get(f"{owner}/{name}")
        own = repo is not None and repo.installation_id == info.context.token.installation_id
        if repo is None or (repo.private and not own):
            raise TypedError(REPOSITORY_NOT_FOUND.format(owner=owner, name=name), "NOT_FOUND")
        return {
            "nameWithOwner": repo.full_name,
            "pullRequests": lambda _info, **args: self.pull_requests(repo, args),
        }

    def pull_requests(self, repo: Repo, args: dict[str, Any]) -> JSON:
        first, last = args.get("first"), args.get("last")
        if first is None and last is None:
            raise GraphQLError(NO_PAGE_SIZE.format(field="pullRequests"))
        for which, count in (("first", first), ("last", last)):
            if count is not None and not 0 <= count <= MAX_PAGE:
                raise GraphQLError(
                    PAGE_TOO_LARGE.format(count=count, field="pullRequests", which=which)
                )
        found = [issue for issue in repo.issues.values() if issue.pull is not None]
        head, base = args.get("headRefName"), args.get("baseRefName")
        states = set(args.get("states") or STATE_NAMES)
        found = [
            issue
            for issue in found
            if issue.pull is not None
            and head in (None, issue.pull.head_ref)
            and base in (None, issue.pull.base_ref)
            and pull_state(issue) in states
        ]
        order = args.get("orderBy") or {"field": "CREATED_AT", "direction": "ASC"}
        found.sort(key=ORDER_KEYS[order["field"]], reverse=order["direction"] == "DESC")
        total = len(found)
        page = found[:first] if first is not None else found
        page = page[len(page) - last :] if last is not None and last < len(page) else page
        nodes = [pull_fields(self.sb, repo, issue) for issue in page]
        return {"totalCount": total, "nodes": nodes}
