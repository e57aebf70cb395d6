"""GraphQL ``PullRequest`` nodes as the REST pull subset the pin flow reads, the query's
document, and how a failed query is classified for the inbox."""

from __future__ import annotations

import http
from typing import Any

import gidgethub
import pytest
from graphql import parse

from bot.core.errors import PermanentError, TransientError, is_transient
from bot.github.changes import Repo
from bot.github.pull_states import (
    PER_BRANCH,
    branch_pulls,
    failure_of,
    query_for,
    rest_shaped,
)

BRANCH = "followup-bot/bump/flash-attention"


def node(number: int, state: str, **extra: Any) -> dict[str, Any]:
    return {
        "number": number,
        "state": state,
        "title": f"Bump to {number}",
        "mergedAt": None,
        "headRefName": BRANCH,
        "headRefOid": f"{number:040x}",
        "isCrossRepository": False,
        **extra,
    }


def test_an_open_pull_is_rest_open() -> None:
    assert rest_shaped(node(7, "OPEN")) == {
        "number": 7,
        "state": "open",
        "title": "Bump to 7",
        "merged_at": None,
        "head": {"ref": BRANCH, "sha": f"{7:040x}"},
    }


def test_a_merged_pull_is_rest_closed_with_merged_at() -> None:
    shaped = rest_shaped(node(8, "MERGED", mergedAt="2026-12-03T10:00:00Z"))
    assert (shaped["state"], shaped["merged_at"]) == ("closed", "2026-12-03T10:00:00Z")


def test_a_closed_pull_is_rest_closed_unmerged() -> None:
    shaped = rest_shaped(node(9, "CLOSED"))
    assert (shaped["state"], shaped["merged_at"]) == ("closed", None)


def test_pulls_are_newest_first_and_a_forks_namesake_is_not_ours() -> None:
    nodes = [node(3, "CLOSED"), node(12, "OPEN", isCrossRepository=True), None, node(5, "OPEN")]
    assert [pr["number"] for pr in branch_pulls(nodes)] == [5, 3]


def test_branch_names_travel_as_variables() -> None:
    document = query_for(3)
    parsed = parse(document)  # well-formed GraphQL
    assert parsed.definitions
    assert "followup-bot" not in document
    for index in range(3):
        assert f"b{index}: pullRequests(headRefName: $b{index}, first: {PER_BRANCH}" in document
    assert "orderBy: {field: CREATED_AT, direction: DESC}" in document


def query_error(*kinds: str | None) -> gidgethub.QueryError:
    return gidgethub.QueryError({"errors": [{"message": "no", "type": kind} for kind in kinds]})


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (query_error("NOT_FOUND"), False),
        (query_error("FORBIDDEN"), False),
        (query_error(None), True),  # e.g. "Something went wrong while executing your query"
        (query_error("NOT_FOUND", None), True),
        (
            gidgethub.BadGraphQLRequest(
                http.HTTPStatus(403), {"message": "You have exceeded a secondary rate limit."}
            ),
            True,
        ),
        (gidgethub.BadGraphQLRequest(http.HTTPStatus(403), {"message": "Forbidden"}), False),
        (gidgethub.GraphQLException("Response contained no data", b""), True),
    ],
)
def test_a_failed_query_isfailure_of_as_the_rest_read_would_be(
    exc: gidgethub.GraphQLException, transient: bool
) -> None:
    found = failure_of(Repo.parse("acme/widgets"), exc)
    assert isinstance(found, TransientError if transient else PermanentError)
    assert is_transient(found) is transient
