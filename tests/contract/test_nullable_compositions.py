"""``nullable`` beside allOf/oneOf/anyOf: rewritten at extraction so null validates."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from openapi_schema_validator import OAS30ReadValidator, OAS30WriteValidator
from referencing import Registry
from referencing.jsonschema import DRAFT4

import sandbox
from sandbox.contract import SUBSET_FILE

DATA_DIR = Path(sandbox.__file__).parent / "data"
NULL_BRANCH = {"enum": [None]}
COMPOSITIONS = ("allOf", "oneOf", "anyOf")
STRING_OR_INTEGER = [{"type": "string"}, {"type": "integer"}]


@pytest.fixture(scope="module")
def regenerate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regenerate", DATA_DIR / "regenerate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _errors(schema: dict[str, Any], instance: object, *, writing: bool = False) -> list[str]:
    cls = OAS30WriteValidator if writing else OAS30ReadValidator
    return [error.message for error in cls(schema).iter_errors(instance)]


def test_a_nullable_one_of_becomes_any_of_itself_or_null(regenerate: ModuleType) -> None:
    document = {"s": {"nullable": True, "oneOf": STRING_OR_INTEGER}}
    assert regenerate.allow_null_in_nullable_compositions(document) == 1
    assert document["s"] == {"anyOf": [{"oneOf": STRING_OR_INTEGER}, NULL_BRANCH]}


def test_siblings_go_inside_and_read_write_markers_stay_outside(regenerate: ModuleType) -> None:
    schema = {
        "type": "object",
        "nullable": True,
        "readOnly": True,
        "allOf": [{"required": ["id"]}],
        "discriminator": {"propertyName": "kind"},
    }
    regenerate.allow_null_in_nullable_compositions({"s": schema})
    assert schema == {
        "anyOf": [
            {
                "type": "object",
                "allOf": [{"required": ["id"]}],
                "discriminator": {"propertyName": "kind"},
            },
            NULL_BRANCH,
        ],
        "readOnly": True,
    }


def test_other_schemas_are_left_alone_and_a_second_pass_changes_nothing(
    regenerate: ModuleType,
) -> None:
    document: dict[str, Any] = {
        "typed": {"type": "string", "nullable": True},
        "not_nullable": {"oneOf": STRING_OR_INTEGER},
        "nullable_false": {"nullable": False, "anyOf": STRING_OR_INTEGER},
        "fixed": {"nullable": True, "anyOf": STRING_OR_INTEGER},
    }
    untouched = json.loads(json.dumps({k: v for k, v in document.items() if k != "fixed"}))
    assert regenerate.allow_null_in_nullable_compositions(document) == 1
    once = json.dumps(document)
    assert regenerate.allow_null_in_nullable_compositions(document) == 0
    assert json.dumps(document) == once
    assert {k: v for k, v in document.items() if k != "fixed"} == untouched


def test_nested_nullable_compositions_are_all_fixed(regenerate: ModuleType) -> None:
    inner = {"nullable": True, "oneOf": STRING_OR_INTEGER}
    outer = {"nullable": True, "allOf": [{"type": "object", "properties": {"x": inner}}]}
    assert regenerate.allow_null_in_nullable_compositions({"outer": outer}) == 2
    assert _errors(outer, None) == []
    assert _errors(outer, {"x": None}) == []
    assert _errors(outer, {"x": 1.5}) != []


@pytest.mark.parametrize("keyword", COMPOSITIONS)
def test_the_validator_accepts_null_only_after_the_fix(
    regenerate: ModuleType, keyword: str
) -> None:
    schema: dict[str, Any] = {"nullable": True, keyword: [{"type": "string"}]}
    # The bug being fixed: OAS30 validators honour nullable only beside "type".
    assert _errors(schema, None) != []
    regenerate.allow_null_in_nullable_compositions({"s": schema})
    assert _errors(schema, None) == []
    assert _errors(schema, "text") == []
    assert _errors(schema, 3) != []


def test_a_read_only_property_still_need_not_be_written(regenerate: ModuleType) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "required": ["owner"],
        "properties": {
            "owner": {"nullable": True, "readOnly": True, "oneOf": [{"type": "object"}]}
        },
    }
    regenerate.allow_null_in_nullable_compositions(schema)
    assert _errors(schema, {}, writing=True) == []
    assert _errors(schema, {}) != []  # a response must still carry it


def _committed() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((DATA_DIR / SUBSET_FILE).read_text("utf-8"))
    return document


def _schemas(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key not in ("enum", "default", "required", "const"):
                yield from _schemas(value)
    elif isinstance(node, list):
        for item in node:
            yield from _schemas(item)


def test_the_committed_subset_has_no_nullable_composition_left() -> None:
    leftovers = [
        schema
        for schema in _schemas(_committed())
        if schema.get("nullable") is True and any(k in schema for k in COMPOSITIONS)
    ]
    assert leftovers == []


@pytest.mark.parametrize("role", ["author", "committer"])
def test_a_rest_commit_may_name_no_account(role: str) -> None:
    uri = "urn:test:subset"
    registry: Registry[Any] = Registry().with_resource(uri, DRAFT4.create_resource(_committed()))
    pointer = f"{uri}#/components/schemas/commit/properties/{role}"
    validator = OAS30ReadValidator({"$ref": pointer}, registry=registry)
    assert list(validator.iter_errors(None)) == []
    assert list(validator.iter_errors("ada@example.com")) != []
