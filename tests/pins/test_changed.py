"""Which pins a push to main may have moved (``bot.pins.changed``)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config.models import CompanionConfig, PinConfig
from bot.config.parse import CONFIG_PATH
from bot.pins.changed import (
    PUSH_COMMITS_CAP,
    SELECT_ALL,
    changed_files,
    main_push_selection,
    touches,
)


def commit(added: Any = (), modified: Any = (), removed: Any = ()) -> dict[str, Any]:
    return {"added": list(added), "modified": list(modified), "removed": list(removed)}


def test_every_touched_path_of_every_commit() -> None:
    payload = {"commits": [commit(added=["a"], modified=["b"]), commit(removed=["c"])]}
    assert changed_files(payload) == frozenset({"a", "b", "c"})


@pytest.mark.parametrize(
    "payload",
    [
        {"forced": True, "commits": [commit(added=["a"])]},  # history rewritten
        {"commits": []},  # a new branch or a tag
        {"commits": [commit(added=["a"])] * PUSH_COMMITS_CAP},  # perhaps a cut list
        {},  # no commits listed at all
        {"commits": ["abc"]},
        {"commits": [{"added": "a", "modified": [], "removed": []}]},
        {"commits": [{"added": [1], "modified": [], "removed": []}]},
        {"commits": [{"modified": []}]},
    ],
)
def test_a_push_that_cannot_say_what_it_touched(payload: dict[str, Any]) -> None:
    assert changed_files(payload) is None
    assert main_push_selection(payload) == SELECT_ALL


def test_the_config_changed_selects_every_pin() -> None:
    payload = {"commits": [commit(modified=[CONFIG_PATH, "README.md"])]}
    assert main_push_selection(payload) == SELECT_ALL


def test_otherwise_the_files_are_the_selection() -> None:
    payload = {"commits": [commit(modified=["b", "a"])]}
    assert main_push_selection(payload) == {"files": ["a", "b"]}


def test_a_pin_is_touched_by_its_file_or_a_companion() -> None:
    pin = PinConfig(
        name="deepgemm",
        upstream="deepseek-ai/DeepGEMM",
        file="cmake/deepgemm.cmake",
        dependency="deepgemm",
        also=(CompanionConfig(file="tools/install_deepgemm.sh", variable="DEEPGEMM_GIT_REF"),),
    )
    assert touches(pin, frozenset({"cmake/deepgemm.cmake"}))
    assert touches(pin, frozenset({"tools/install_deepgemm.sh"}))
    assert not touches(pin, frozenset({"README.md"}))
