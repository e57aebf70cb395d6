"""Which pins one sync looks at (``bot.pins.selection``), and the document it travels as."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config.models import PinConfig
from bot.core.errors import PermanentError
from bot.pins.selection import Selection

BRANCH_PIN = PinConfig(name="fa", upstream="Up/FA", branch="main", file="fa.cmake", dependency="fa")
TAG_PIN = PinConfig(
    name="cutlass", upstream="up/cutlass", track="tags", file="c.cmake", dependency="c"
)
PINS = (BRANCH_PIN, TAG_PIN)


def matched(selection: Selection) -> list[str]:
    return [pin.name for pin in PINS if selection.matches(pin)]


@pytest.mark.parametrize(
    ("selection", "doc", "names", "upstream_push"),
    [
        (Selection.every(), {"all": True}, ["fa", "cutlass"], False),
        (Selection.of_pin("fa"), {"pin": "fa"}, ["fa"], False),
        (
            Selection(files=frozenset({"c.cmake", "x"})),
            {"files": ["c.cmake", "x"]},
            ["cutlass"],
            False,
        ),
        (
            Selection.upstream_tags("UP/cutlass"),
            {"upstream": "up/cutlass", "tags": True},
            ["cutlass"],
            False,
        ),
        (
            Selection.upstream_branch("up/fa", "main"),
            {"upstream": "up/fa", "branch": "main"},
            ["fa"],
            True,
        ),
        (
            Selection.upstream_branch("up/fa", "dev"),
            {"upstream": "up/fa", "branch": "dev"},
            [],
            True,
        ),
    ],
)
def test_each_selection_round_trips_and_matches(
    selection: Selection, doc: dict[str, Any], names: list[str], upstream_push: bool
) -> None:
    assert selection.dump() == doc
    assert Selection.load(doc) == selection
    assert matched(selection) == names
    assert selection.upstream_push is upstream_push


def test_an_upstream_without_a_branch_or_tags_is_every_pin() -> None:
    assert Selection.load({"upstream": "up/fa"}) == Selection.every()
    assert Selection.load({"upstream": "up/fa", "tags": False}) == Selection.every()


def test_a_push_to_main_selects_the_pins_whose_files_it_touched() -> None:
    payload = {"commits": [{"added": [], "modified": ["fa.cmake"], "removed": []}]}
    assert matched(Selection.main_push(payload)) == ["fa"]
    assert Selection.main_push({"forced": True}) == Selection.every()


@pytest.mark.parametrize("doc", [{"pin": 3}, {"files": "a"}, {"upstream": "u", "tags": "yes"}])
def test_a_field_of_the_wrong_type_is_a_permanent_error(doc: dict[str, Any]) -> None:
    with pytest.raises(PermanentError):
        Selection.load(doc)
