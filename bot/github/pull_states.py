"""The PRs of many branches of one repository in one GraphQL query.

A sync of P pins used to list each bump branch's PRs with its own REST request;
one query with an aliased ``pullRequests`` connection per branch answers them all.
Each node becomes the subset of REST's pull-request shape the pin flow reads
(``number``, ``state``, ``title``, ``merged_at``, ``head.ref``, ``head.sha``), with
REST's meanings, newest first: what ``changes.pulls_for_branch`` returns.

A failed query raises (never "no PRs": that would open a duplicate PR); a
transient one as the inbox retries it, like a failed REST read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.core.errors import PermanentError, TransientError
from bot.github.changes import Repo

# REST's listing asked for 20 per branch; the same page keeps the answers alike.
PER_BRANCH = 20
NODE_FIELDS = "number state title mergedAt headRefName headRefOid isCrossRepository"
# GitHub's error types that asking again will not change (REST's 404 and 403).
PERMANENT_TYPES = frozenset({"NOT_FOUND", "FORBIDDEN"})
QUERY_FAILED = "GitHub's GraphQL query of {repo}'s bump-branch PRs failed: {reason}"
ANSWER_INCOMPLETE = "GitHub's GraphQL answer has no PR list for {repo} branch {branch!r}"


def query_for(count: int) -> str:
    """The document for ``count`` branches: branch names travel as variables ($b0 ...),
    so no name is ever spliced into the query text."""
    names = ", ".join(f"$b{index}: String!" for index in range(count))
    order = "{field: CREATED_AT, direction: DESC}"
    connections = "\n".join(
        f"    b{index}: pullRequests(headRefName: $b{index}, first: {PER_BRANCH}, "
        f"orderBy: {order}) {{ nodes {{ {NODE_FIELDS} }} }}"
        for index in range(count)
    )
    return (
        f"query BumpBranchPulls($owner: String!, $name: String!, {names}) {{\n"
        f"  repository(owner: $owner, name: $name) {{\n{connections}\n  }}\n}}\n"
    )


def rest_shaped(node: Mapping[str, Any]) -> dict[str, Any]:
    """A ``PullRequest`` node as REST shows it: ``state`` is "open" or "closed" (a merged
    PR is "closed" with ``merged_at`` set)."""
    return {
        "number": int(node["number"]),
        "state": "open" if node["state"] == "OPEN" else "closed",
        "title": str(node["title"]),
        "merged_at": node.get("mergedAt"),
        "head": {"ref": str(node["headRefName"]), "sha": str(node["headRefOid"])},
    }


def branch_pulls(nodes: Sequence[Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """A connection's nodes as REST's ``head=owner:branch`` listing, newest first: a PR
    from a fork with the same branch name is not the repository's own branch."""
    pulls = [rest_shaped(n) for n in nodes if n is not None and not n.get("isCrossRepository")]
    return sorted(pulls, key=lambda pr: int(pr["number"]), reverse=True)


async def pulls_by_branch(
    gh: GitHubAPI, repo: Repo, branches: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """Every PR (open or closed) of each of ``branches``, newest first, in one request."""
    wanted = list(dict.fromkeys(branches))
    if not wanted:
        return {}
    variables = {f"b{index}": branch for index, branch in enumerate(wanted)}
    try:
        data = await gh.graphql(
            query_for(len(wanted)), owner=repo.owner, name=repo.name, **variables
        )
    except gidgethub.GraphQLException as exc:
        raise failure_of(repo, exc) from exc
    found = (data or {}).get("repository") or {}
    answer: dict[str, list[dict[str, Any]]] = {}
    for index, branch in enumerate(wanted):
        connection = found.get(f"b{index}")
        if not isinstance(connection, Mapping):
            raise TransientError(ANSWER_INCOMPLETE.format(repo=repo.full_name, branch=branch))
        answer[branch] = branch_pulls(connection.get("nodes") or [])
    return answer


def failure_of(repo: Repo, exc: gidgethub.GraphQLException) -> Exception:
    """What the inbox should do about a failed query, as it would for the REST read:
    a 5xx arrives as ``GitHubBroken`` (already transient); gidgethub raises the rest as
    GraphQL errors, so a secondary limit (403/429) must be told from a refusal here."""
    response = exc.response if isinstance(exc.response, Mapping) else {}
    message = QUERY_FAILED.format(repo=repo.full_name, reason=exc)
    if isinstance(exc, gidgethub.QueryError):
        kinds = {e.get("type") for e in response.get("errors") or [] if isinstance(e, Mapping)}
        permanent = bool(kinds) and kinds <= PERMANENT_TYPES
    elif isinstance(exc, gidgethub.BadGraphQLRequest):
        said = str(response.get("message") or "").lower()
        limited = exc.status_code in (403, 429) and "rate limit" in said
        permanent = not limited
    else:  # no body, not JSON (a proxy's error page), an unexpected status
        permanent = False
    return PermanentError(message) if permanent else TransientError(message)
