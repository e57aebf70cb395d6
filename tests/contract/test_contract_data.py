"""The committed data: offline, pinned, stripped of prose, reproducible."""

from __future__ import annotations

import filecmp
import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest

import sandbox
from sandbox.contract import SUBSET_FILE, WEBHOOKS_DIR, Contract

DATA_DIR = Path(sandbox.__file__).parent / "data"
REGENERATE = DATA_DIR / "regenerate.py"
# Where `npm install @octokit/openapi@23.0.2 @octokit/webhooks-examples@7.6.1` put
# its node_modules: `make test`'s set-up (tools/test_setup.sh) installs them and sets it.
NODE_MODULES_ENV = "FOLLOWUP_BOT_OCTOKIT_NODE_MODULES"
NO_NODE_MODULES = (
    f"{NODE_MODULES_ENV} is not set: the reproducibility test needs the pinned @octokit"
    " npm packages (run it through make test, which installs them and sets it)"
)
PROSE_KEYS = {"description", "summary", "externalDocs", "examples", "example", "x-github"}


def _load_regenerate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regenerate", REGENERATE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def regenerate() -> ModuleType:
    return _load_regenerate()


def _subset() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((DATA_DIR / SUBSET_FILE).read_text("utf-8"))
    return document


def test_loading_and_validating_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("the contract tried to open a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    contract = Contract(_subset())  # a fresh instance: Contract.load() is cached
    match = contract.match("GET", "/repos/o/r/pulls/1")
    assert match is not None
    # A 404 body goes through a $ref to components/responses and then to schemas.
    assert contract.validate_response(match, 404, {"message": "Not Found"}) == []


def test_the_subset_is_pinned_and_licensed() -> None:
    info = _subset()["info"]
    assert info["version"] == "23.0.2"
    assert info["license"]["name"] == "MIT"


def test_operations_carry_no_prose() -> None:
    for item in _subset()["paths"].values():
        for operation in item.values():
            assert not PROSE_KEYS & operation.keys()
            for parameter in operation.get("parameters", []):
                assert not PROSE_KEYS & parameter.keys()


def test_property_names_that_look_like_prose_survive() -> None:
    repository = _subset()["components"]["schemas"]["repository"]
    assert "description" in repository["properties"]
    assert "description" not in repository


def test_strip_prose_keeps_names_data_and_multi_segment(regenerate: ModuleType) -> None:
    raw = {
        "description": "gone",
        "x-github": {"category": "git"},
        "x-multi-segment": True,
        "properties": {
            "description": {"type": "string", "description": "gone", "example": "x"},
            "title": {"type": "string", "title": "gone"},
        },
        "default": {"description": "kept, it is data"},
        "enum": ["a"],
    }
    assert regenerate.strip_prose(raw) == {
        "x-multi-segment": True,
        "properties": {"description": {"type": "string"}, "title": {"type": "string"}},
        "default": {"description": "kept, it is data"},
        "enum": ["a"],
    }


def test_nullable_enums_gain_null_once(regenerate: ModuleType) -> None:
    document: dict[str, dict[str, Any]] = {
        "a": {"type": "string", "nullable": True, "enum": ["x"]},
        "b": {"type": "string", "enum": ["y"]},
        "c": {"type": "string", "nullable": True, "enum": ["z", None]},
    }
    assert regenerate.allow_null_in_nullable_enums(document) == 1
    assert document["a"]["enum"] == ["x", None]
    assert document["b"]["enum"] == ["y"]
    assert regenerate.allow_null_in_nullable_enums(document) == 0


def test_committed_subset_allows_null_in_known_nullable_enums() -> None:
    schemas = _subset()["components"]["schemas"]
    assert None in schemas["issue"]["properties"]["state_reason"]["enum"]
    assert None in schemas["check-run"]["properties"]["conclusion"]["enum"]


def test_the_bare_label_array_is_added_once(regenerate: ModuleType) -> None:
    operation = {
        "requestBody": {
            "content": {"application/json": {"schema": {"oneOf": [{"type": "object"}]}}}
        }
    }
    assert regenerate.allow_bare_label_array(operation) is True
    assert regenerate.allow_bare_label_array(operation) is False
    alternatives = operation["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    assert [alt["type"] for alt in alternatives] == ["object", "array"]


def _run_regenerate(node_modules: str, out: Path) -> None:
    subprocess.run(
        [sys.executable, str(REGENERATE), node_modules, "--out", str(out)],
        check=True,
        capture_output=True,
    )


def _same_tree(left: Path, right: Path) -> bool:
    names = sorted(p.name for p in (left / WEBHOOKS_DIR).glob("*.json"))
    if names != sorted(p.name for p in (right / WEBHOOKS_DIR).glob("*.json")):
        return False
    files = [SUBSET_FILE, *(f"{WEBHOOKS_DIR}/{name}" for name in names)]
    return all(filecmp.cmp(left / f, right / f, shallow=False) for f in files)


def test_regeneration_is_deterministic_and_matches_the_committed_data(tmp_path: Path) -> None:
    node_modules = os.environ.get(NODE_MODULES_ENV)
    # A missing package fails the run: a skip in every run would be a check that never runs.
    assert node_modules, NO_NODE_MODULES
    _run_regenerate(node_modules, tmp_path / "first")
    _run_regenerate(node_modules, tmp_path / "second")
    assert _same_tree(tmp_path / "first", tmp_path / "second")
    assert _same_tree(tmp_path / "first", DATA_DIR)
