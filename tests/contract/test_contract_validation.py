"""Requests and responses checked against GitHub's own description."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.contract import MAX_PROBLEMS, Contract
from sandbox.contract_routes import Match, Operation

SHA_A = "a" * 40
SHA_B = "b" * 40


def _match(contract: Contract, method: str, path: str) -> Match:
    match = contract.match(method, path)
    assert match is not None
    return match


@pytest.fixture
def create_commit(contract: Contract) -> Match:
    return _match(contract, "POST", "/repos/o/r/git/commits")


@pytest.fixture
def merge(contract: Contract) -> Match:
    return _match(contract, "PUT", "/repos/o/r/pulls/5/merge")


def test_a_valid_create_commit_body_passes(contract: Contract, create_commit: Match) -> None:
    body = {"message": "Bump flash-attention", "tree": SHA_A, "parents": [SHA_B]}
    assert contract.validate_request(create_commit, {}, body) == []


def test_a_create_commit_without_tree_fails(contract: Contract, create_commit: Match) -> None:
    problems = contract.validate_request(create_commit, {}, {"message": "m", "parents": []})
    assert problems == ["git/create-commit request body: $: 'tree' is a required property"]


def test_a_wrongly_typed_field_is_located(contract: Contract, create_commit: Match) -> None:
    body = {"message": "m", "tree": SHA_A, "parents": [SHA_B, 7]}
    (problem,) = contract.validate_request(create_commit, {}, body)
    assert problem.startswith("git/create-commit request body: $.parents[1]: 7 is not of type")


def test_a_value_validated_before_gets_the_same_answer_and_a_changed_one_its_own(
    contract: Contract, create_commit: Match
) -> None:
    good = {"message": "m", "tree": SHA_A, "parents": [SHA_B]}
    bad: dict[str, object] = {"message": "m", "parents": [SHA_B]}
    for _ in range(2):
        assert contract.validate_request(create_commit, {}, good) == []
        assert contract.validate_request(create_commit, {}, dict(bad)) == [
            "git/create-commit request body: $: 'tree' is a required property"
        ]
    bad["tree"] = 7  # the same object, changed since it was remembered
    (problem,) = contract.validate_request(create_commit, {}, bad)
    assert problem.startswith("git/create-commit request body: $.tree: 7 is not of type")


def test_a_value_that_is_not_json_is_still_validated(
    contract: Contract, create_commit: Match
) -> None:
    body = {"message": "m", "tree": SHA_A, "parents": [SHA_B, b"raw"]}
    (problem,) = contract.validate_request(create_commit, {}, body)
    assert problem.startswith("git/create-commit request body: $.parents[1]: b'raw' is not of type")


def test_a_required_body_must_be_sent(contract: Contract, create_commit: Match) -> None:
    assert contract.validate_request(create_commit, {}, None) == [
        "git/create-commit request body: $: a JSON body is required"
    ]


def test_an_optional_body_may_be_omitted(contract: Contract, merge: Match) -> None:
    assert contract.validate_request(merge, {}, None) == []


def test_a_body_is_refused_where_none_is_declared(contract: Contract) -> None:
    match = _match(contract, "GET", "/repos/o/r/pulls/5")
    assert contract.validate_request(match, {}, {"x": 1}) == [
        "pulls/get request body: $: this operation takes no request body"
    ]


def test_a_bad_enum_value_fails(contract: Contract, merge: Match) -> None:
    (problem,) = contract.validate_request(merge, {}, {"merge_method": "fast-forward"})
    assert problem.startswith("pulls/merge request body: $.merge_method: 'fast-forward' is not one")


def test_a_nullable_enum_accepts_null(contract: Contract) -> None:
    # issue.state_reason is nullable with an enum that lacked null in the spec.
    match = _match(contract, "PATCH", "/repos/o/r/issues/3")
    assert contract.validate_request(match, {}, {"state": "open", "state_reason": None}) == []
    assert contract.validate_request(match, {}, {"state_reason": "bogus"}) != []


@pytest.mark.parametrize("body", [["ready", "ci/full"], {"labels": ["ready"]}])
def test_both_add_labels_forms_pass(contract: Contract, body: object) -> None:
    match = _match(contract, "POST", "/repos/o/r/issues/3/labels")
    assert contract.validate_request(match, {}, body) == []


@pytest.mark.parametrize("body", [[], [1], "ready"])
def test_a_malformed_add_labels_body_fails(contract: Contract, body: object) -> None:
    match = _match(contract, "POST", "/repos/o/r/issues/3/labels")
    (problem,) = contract.validate_request(match, {}, body)
    assert problem.startswith("issues/add-labels request body: $: ")


def test_path_parameters_are_coerced_to_their_type(contract: Contract) -> None:
    assert contract.validate_request(_match(contract, "GET", "/repos/o/r/pulls/12"), {}, None) == []
    (problem,) = contract.validate_request(_match(contract, "GET", "/repos/o/r/pulls/x"), {}, None)
    assert problem == "pulls/get path parameter pull_number: $: 'x' is not of type 'integer'"


def test_query_parameters_are_coerced_and_checked(contract: Contract) -> None:
    match = _match(contract, "GET", "/repos/o/r/pulls")
    good: dict[str, str | list[str]] = {
        "head": "o:followup-bot/bump/fa",
        "state": "all",
        "per_page": "100",
        "page": ["2"],
    }
    assert contract.validate_request(match, good, None) == []
    problems = contract.validate_request(match, {"state": "merged", "per_page": "many"}, None)
    assert problems == [
        "pulls/list query parameter state: $: 'merged' is not one of ['open', 'closed', 'all']",
        "pulls/list query parameter per_page: $: 'many' is not of type 'integer'",
    ]


def test_a_repeated_scalar_query_parameter_fails(contract: Contract) -> None:
    match = _match(contract, "GET", "/repos/o/r/pulls")
    assert contract.validate_request(match, {"state": ["open", "closed"]}, None) == [
        "pulls/list query parameter state: $: parameter 'state' given 2 times but is not an array"
    ]


def test_an_undeclared_status_fails(contract: Contract, merge: Match) -> None:
    assert contract.validate_response(merge, 201, {}) == [
        "pulls/merge response 201: $: status 201 is not declared "
        "(declared: 200, 403, 404, 405, 409, 422)"
    ]


def test_a_declared_response_body_is_validated(contract: Contract, merge: Match) -> None:
    assert (
        contract.validate_response(merge, 200, {"sha": SHA_A, "merged": True, "message": ""}) == []
    )
    assert (
        contract.validate_response(merge, 405, {"message": "Pull Request is not mergeable"}) == []
    )
    (problem,) = contract.validate_response(
        merge, 200, {"sha": SHA_A, "merged": "yes", "message": ""}
    )
    assert problem.startswith("pulls/merge response 200: $.merged: 'yes' is not of type")


def test_a_shared_error_response_is_resolved(contract: Contract) -> None:
    match = _match(contract, "GET", "/repos/o/r/contents/README.md")
    assert contract.validate_response(match, 404, {"message": "Not Found"}) == []
    assert contract.validate_response(match, 404, None) == [
        "repos/get-content response 404: $: status 404 declares a JSON body but none was sent"
    ]


def test_bodyless_statuses_must_stay_empty(contract: Contract) -> None:
    delete_ref = _match(contract, "DELETE", "/repos/o/r/git/refs/heads/x")
    assert contract.validate_response(delete_ref, 204, None) == []
    assert contract.validate_response(delete_ref, 204, {}) == [
        "git/delete-ref response 204: $: status 204 must not carry a body"
    ]
    get_content = _match(contract, "GET", "/repos/o/r/contents/x")
    assert contract.validate_response(get_content, 304, None) == []
    assert contract.validate_response(get_content, 302, None) == []
    assert contract.validate_response(get_content, 302, {"a": 1}) == [
        "repos/get-content response 302: $: status 302 declares no body but one was sent"
    ]


def test_a_match_from_elsewhere_is_refused(contract: Contract) -> None:
    foreign = Match(Operation("pulls/get", "POST", "/repos/{owner}/{repo}/pulls"), {})
    with pytest.raises(ValueError, match="not an operation of this contract"):
        contract.validate_request(foreign, {}, None)


def test_problems_are_capped(contract: Contract, create_commit: Match) -> None:
    body = {"message": 1, "tree": SHA_A, "parents": list(range(20))}
    problems = contract.validate_request(create_commit, {}, body)
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == "... and 11 more problems"


# --- a tiny hand-written description for the branches GitHub's subset lacks ---

_TINY: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "tiny", "version": "1"},
    "paths": {
        "/things": {
            "get": {
                "operationId": "things/list",
                "parameters": [
                    {"$ref": "#/components/parameters/limit"},
                    {"name": "ratio", "in": "query", "schema": {"type": "number"}},
                    {"name": "draft", "in": "query", "schema": {"type": "boolean"}},
                    {
                        "name": "ids",
                        "in": "query",
                        "schema": {"type": "array", "items": {"type": "integer"}},
                    },
                    {"name": "X-Trace", "in": "header", "required": True, "schema": {}},
                ],
                "responses": {
                    "200": {"content": {"text/plain": {"schema": {"type": "string"}}}},
                    "default": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/err"}}
                        }
                    },
                },
            },
            "post": {
                "operationId": "things/create",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    "id": {"type": "integer", "readOnly": True},
                                    "name": {"type": "string"},
                                },
                                "required": ["id", "name"],
                            }
                        }
                    }
                },
                "responses": {"201": {"content": {"application/json": {"schema": {}}}}},
            },
        }
    },
    "components": {
        "parameters": {
            "limit": {
                "name": "limit",
                "in": "query",
                "required": True,
                "schema": {"type": "integer"},
            }
        },
        "schemas": {
            "err": {
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            }
        },
    },
}


@pytest.fixture
def tiny() -> Contract:
    return Contract(_TINY)


def test_a_missing_required_query_parameter_fails(tiny: Contract) -> None:
    match = _match(tiny, "GET", "/things")
    assert tiny.validate_request(match, {}, None) == [
        "things/list query parameter limit: $: required query parameter 'limit' is missing"
    ]


def test_numbers_booleans_and_arrays_are_coerced(tiny: Contract) -> None:
    match = _match(tiny, "GET", "/things")
    query: dict[str, str | list[str]] = {
        "limit": "5",
        "ratio": "0.5",
        "draft": "true",
        "ids": ["1", "2"],
    }
    assert tiny.validate_request(match, query, None) == []
    assert tiny.validate_request(match, {"limit": "5", "ids": "3"}, None) == []
    problems = tiny.validate_request(
        match, {"limit": "5", "ratio": "half", "draft": "yes", "ids": ["1", "x"]}, None
    )
    assert problems == [
        "things/list query parameter ratio: $: 'half' is not of type 'number'",
        "things/list query parameter draft: $: 'yes' is not of type 'boolean'",
        "things/list query parameter ids: $[1]: 'x' is not of type 'integer'",
    ]


def test_read_only_fields_are_neither_required_nor_accepted_in_requests(tiny: Contract) -> None:
    match = _match(tiny, "POST", "/things")
    assert tiny.validate_request(match, {}, {"name": "n"}) == []
    problems = tiny.validate_request(match, {}, {"name": "n", "id": 3, "extra": True})
    assert problems == [
        "things/create request body: $: Additional properties are not allowed "
        "('extra' was unexpected)",
        "things/create request body: $.id: Tried to write read-only property with 3",
    ]


def test_default_covers_undeclared_statuses(tiny: Contract) -> None:
    match = _match(tiny, "GET", "/things")
    assert tiny.validate_response(match, 500, {"message": "boom"}) == []
    assert tiny.validate_response(match, 500, {}) == [
        "things/list response 500: $: 'message' is a required property"
    ]


def test_a_non_json_response_is_not_parsed(tiny: Contract) -> None:
    match = _match(tiny, "GET", "/things")
    assert tiny.validate_response(match, 200, None) == []
