"""Routing a raw request path to the operation GitHub would serve."""

from __future__ import annotations

import pytest

from sandbox.contract import Contract
from sandbox.contract_routes import Match

# Every operation the bot and its sandbox rely on (the sandbox serves exactly these).
EXPECTED_OPERATIONS = {
    "git/get-ref": "GET",
    "repos/create-commit-status": "POST",
    "git/get-commit": "GET",
    "git/get-tree": "GET",
    "git/create-blob": "POST",
    "git/create-tree": "POST",
    "git/create-commit": "POST",
    "git/create-ref": "POST",
    "git/update-ref": "PATCH",
    "git/delete-ref": "DELETE",
    "git/list-matching-refs": "GET",
    "git/get-tag": "GET",
    "repos/get": "GET",
    "repos/get-branch": "GET",
    "repos/get-commit": "GET",
    "repos/get-content": "GET",
    "repos/compare-commits": "GET",
    "repos/list-commits": "GET",
    "repos/get-collaborator-permission-level": "GET",
    "repos/get-combined-status-for-ref": "GET",
    "repos/list-tags": "GET",
    "repos/list-releases": "GET",
    "repos/get-latest-release": "GET",
    "repos/get-release-by-tag": "GET",
    "repos/get-release": "GET",
    "checks/list-for-ref": "GET",
    "checks/create": "POST",
    "checks/get": "GET",
    "checks/list-annotations": "GET",
    "git/get-blob": "GET",
    "checks/update": "PATCH",
    "pulls/create": "POST",
    "pulls/list": "GET",
    "pulls/get": "GET",
    "pulls/update": "PATCH",
    "pulls/list-reviews": "GET",
    "pulls/list-files": "GET",
    "pulls/merge": "PUT",
    "pulls/dismiss-review": "PUT",
    "issues/create-comment": "POST",
    "issues/update-comment": "PATCH",
    "issues/list-comments": "GET",
    "issues/create": "POST",
    "issues/update": "PATCH",
    "issues/get": "GET",
    "issues/list-for-repo": "GET",
    "issues/add-labels": "POST",
    "issues/remove-label": "DELETE",
    "issues/list-events-for-timeline": "GET",
    "reactions/create-for-issue-comment": "POST",
    "apps/create-installation-access-token": "POST",
    "apps/get-repo-installation": "GET",
    "apps/get-authenticated": "GET",
    "rate-limit/get": "GET",
}


def _matched(contract: Contract, method: str, path: str) -> Match:
    match = contract.match(method, path)
    assert match is not None, f"{method} {path} matched nothing"
    return match


def test_the_subset_holds_exactly_the_listed_operations(contract: Contract) -> None:
    operations = {op.operation_id: op.method for op in contract.operations()}
    assert operations == EXPECTED_OPERATIONS
    assert len(contract.operations()) == len(EXPECTED_OPERATIONS)


def test_every_operation_matches_its_own_template(contract: Contract) -> None:
    for operation in contract.operations():
        path = operation.path_template.replace("{", "x").replace("}", "")
        assert _matched(contract, operation.method, path).operation == operation


@pytest.mark.parametrize(
    "path",
    ["/repos/o/r/git/ref/heads%2Ffeature%2Fx", "/repos/o/r/git/ref/heads/feature/x"],
)
def test_a_ref_with_slashes_matches_encoded_or_not(contract: Contract, path: str) -> None:
    match = _matched(contract, "GET", path)
    assert match.operation.operation_id == "git/get-ref"
    assert match.path_params == {"owner": "o", "repo": "r", "ref": "heads/feature/x"}


def test_update_ref_takes_the_rest_of_the_path(contract: Contract) -> None:
    match = _matched(contract, "PATCH", "/repos/o/r/git/refs/heads/followup-bot/bump/fa")
    assert match.operation.operation_id == "git/update-ref"
    assert match.path_params["ref"] == "heads/followup-bot/bump/fa"


def test_a_content_path_keeps_its_slashes_and_is_decoded(contract: Contract) -> None:
    match = _matched(contract, "GET", "/repos/o/r/contents/cmake/external%20projects/x.cmake")
    assert match.operation.operation_id == "repos/get-content"
    assert match.path_params["path"] == "cmake/external projects/x.cmake"


def test_compare_splits_base_and_head_at_the_dots(contract: Contract) -> None:
    match = _matched(contract, "GET", "/repos/o/r/compare/main...followup-bot/bump/fa")
    assert match.operation.operation_id == "repos/compare-commits"
    assert match.path_params == {
        "owner": "o",
        "repo": "r",
        "base": "main",
        "head": "followup-bot/bump/fa",
    }


@pytest.mark.parametrize(
    ("path", "operation_id", "ref"),
    [
        ("/repos/o/r/commits/main/status", "repos/get-combined-status-for-ref", "main"),
        ("/repos/o/r/commits/release/v1/status", "repos/get-combined-status-for-ref", "release/v1"),
        ("/repos/o/r/commits/release/v1/check-runs", "checks/list-for-ref", "release/v1"),
        ("/repos/o/r/commits/release/v1", "repos/get-commit", "release/v1"),
        ("/repos/o/r/commits/status", "repos/get-commit", "status"),
    ],
)
def test_literal_segments_beat_a_greedy_parameter(
    contract: Contract, path: str, operation_id: str, ref: str
) -> None:
    match = _matched(contract, "GET", path)
    assert match.operation.operation_id == operation_id
    assert match.path_params["ref"] == ref


@pytest.mark.parametrize(
    ("method", "path", "operation_id"),
    [
        ("PUT", "/repos/o/r/pulls/5/merge", "pulls/merge"),
        ("PUT", "/repos/o/r/pulls/5/reviews/8/dismissals", "pulls/dismiss-review"),
        ("POST", "/repos/o/r/check-runs", "checks/create"),
        ("GET", "/repos/o/r/check-runs/7", "checks/get"),
        ("GET", "/repos/o/r/check-runs/7/annotations", "checks/list-annotations"),
        ("PATCH", "/repos/o/r/check-runs/7", "checks/update"),
        ("GET", "/repos/o/r/pulls/5/reviews", "pulls/list-reviews"),
        ("GET", "/repos/o/r/pulls/5/files", "pulls/list-files"),
        ("GET", "/repos/o/r/pulls/5", "pulls/get"),
        ("GET", "/repos/o/r/pulls", "pulls/list"),
        ("PATCH", "/repos/o/r/issues/comments/9", "issues/update-comment"),
        ("PATCH", "/repos/o/r/issues/9", "issues/update"),
        ("POST", "/repos/o/r/issues/comments/9/reactions", "reactions/create-for-issue-comment"),
        ("DELETE", "/repos/o/r/issues/9/labels/ready", "issues/remove-label"),
        ("POST", "/app/installations/42/access_tokens", "apps/create-installation-access-token"),
        ("GET", "/rate_limit", "rate-limit/get"),
        ("GET", "/repos/o/r/releases/latest", "repos/get-latest-release"),
        ("GET", "/repos/o/r/releases/7", "repos/get-release"),
        ("GET", "/repos/o/r/releases/tags/v1.0", "repos/get-release-by-tag"),
        ("GET", "/repos/o/r/releases", "repos/list-releases"),
        ("GET", "/repos/o/r/tags", "repos/list-tags"),
        ("GET", "/repos/o/r/git/tags/abc123", "git/get-tag"),
        ("GET", "/repos/o/r/git/matching-refs/tags/v1", "git/list-matching-refs"),
    ],
)
def test_sibling_templates_are_told_apart(
    contract: Contract, method: str, path: str, operation_id: str
) -> None:
    assert _matched(contract, method, path).operation.operation_id == operation_id


def test_method_is_case_insensitive_and_query_is_ignored(contract: Contract) -> None:
    match = _matched(contract, "get", "/repos/o/r/pulls?head=o:branch&state=open")
    assert match.operation.operation_id == "pulls/list"


def test_a_label_name_with_an_encoded_slash_stays_one_parameter(contract: Contract) -> None:
    match = _matched(contract, "DELETE", "/repos/o/r/issues/9/labels/ci%2Fready")
    assert match.path_params["name"] == "ci/ready"


@pytest.mark.parametrize(
    "path",
    ["/nope", "/repos/o/r/wiki", "/repos/o/r/pulls/5/merge/extra", "/repos/o", ""],
)
def test_an_unknown_path_matches_nothing(contract: Contract, path: str) -> None:
    assert contract.match("GET", path) is None
    assert contract.allowed_methods(path) == []


def test_a_known_path_with_the_wrong_method_matches_nothing(contract: Contract) -> None:
    assert contract.match("POST", "/repos/o/r/pulls/5/merge") is None
    assert contract.allowed_methods("/repos/o/r/pulls/5/merge") == ["PUT"]
    assert contract.allowed_methods("/repos/o/r/git/refs/heads/x") == ["DELETE", "PATCH"]


def test_a_release_tag_may_hold_slashes(contract: Contract) -> None:
    match = _matched(contract, "GET", "/repos/o/r/releases/tags/release/v1")
    assert match.operation.operation_id == "repos/get-release-by-tag"
    assert match.path_params["tag"] == "release/v1"
