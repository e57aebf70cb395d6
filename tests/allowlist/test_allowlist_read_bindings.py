"""Which module-level statements bind the allowlist's name, and which only use it."""

from __future__ import annotations

import pytest

from bot.edit import allowlist as al
from bot.edit.allowlist import AllowlistError, read_allowlist


def test_reading_the_name_elsewhere_is_not_a_second_binding() -> None:
    text = 'X = ("a",)\nprint(X)\nY = len(X)\n'

    assert read_allowlist(text, variable="X").entries == ("a",)


def test_an_augmented_assignment_alone_is_not_the_allowlists_form() -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist('X += ("a",)\n', variable="X", filename="f.py")

    assert str(caught.value) == al.MSG_FORM.format(where="f.py:1", variable="X")
