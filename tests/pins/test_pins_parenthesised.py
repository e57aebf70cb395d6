"""A GIT_TAG followed by a nested parenthesis: CMake reads "(" as the value, the bot refuses."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.edit import cmake_pin as pins
from bot.edit.cmake_pin import PinError, read_pin, set_pin

TEXT = "\n" * 4 + "FetchContent_Declare(foo GIT_TAG (v1.2))\n"


@pytest.mark.parametrize(
    "use",
    [
        pytest.param(lambda: read_pin(TEXT, "foo", filename="f.cmake"), id="read"),
        pytest.param(lambda: set_pin(TEXT, "foo", "v1.3", filename="f.cmake"), id="set"),
    ],
)
def test_a_parenthesised_git_tag_is_refused(use: Callable[[], object]) -> None:
    with pytest.raises(PinError) as caught:
        use()

    detail = pins.MSG_UNEDITABLE.format(keyword="GIT_TAG", value="(", reason=pins.REASON_SPECIAL)
    assert str(caught.value) == f"f.cmake:5: {detail}"
