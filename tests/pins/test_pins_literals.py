"""Every literal of a pin in its file: the value repeated beside GIT_TAG changes with it.

Older vLLM (early 2025) pinned cutlass twice in ``CMakeLists.txt``: once as
``GIT_TAG v3.8.0`` in the else() branch of the if/else pair, once in
``set(CUTLASS_REVISION "v3.8.0" CACHE STRING ...)`` further up, each with a comment
asking to keep it in sync with the other (``tests.pin_literal_shapes``): a bump must
change both and nothing else.
"""

from __future__ import annotations

import pytest

from bot.edit.cmake_pin import Pin, Span, list_pins, pin_diff, read_pin, set_pin
from tests.pin_literal_shapes import FLASH_ATTN_SHA as FA_SHA
from tests.pin_literal_shapes import cutlass_cmakelists

OLD = "v3.8.0"
NEW = "v3.9.2"
CUTLASS_CMAKELISTS = cutlass_cmakelists(OLD)


def line_of(needle: str, text: str = CUTLASS_CMAKELISTS) -> int:
    return text.count("\n", 0, text.index(needle)) + 1


SET_LINE = line_of("set(CUTLASS_REVISION")
GIT_TAG_LINE = line_of(f"GIT_TAG {OLD}")


def lines_changed(old: str, new: str) -> list[int]:
    pairs = zip(old.splitlines(), new.splitlines(), strict=True)
    return [number for number, (a, b) in enumerate(pairs, start=1) if a != b]


def test_the_cutlass_tag_and_its_set_revision_are_both_the_pin() -> None:
    pin = read_pin(CUTLASS_CMAKELISTS, "cutlass")

    assert (pin.value, pin.line, pin.variable) == (OLD, GIT_TAG_LINE, None)
    [repeat] = pin.repeats
    assert repeat.line == SET_LINE
    assert CUTLASS_CMAKELISTS[repeat.start : repeat.end] == OLD
    assert [span.line for span in pin.literals] == [SET_LINE, GIT_TAG_LINE]


def test_a_cutlass_bump_changes_both_literals_and_nothing_else() -> None:
    bumped = set_pin(CUTLASS_CMAKELISTS, "cutlass", NEW)

    assert lines_changed(CUTLASS_CMAKELISTS, bumped) == [SET_LINE, GIT_TAG_LINE]
    assert f'set(CUTLASS_REVISION "{NEW}" CACHE STRING' in bumped
    assert f"        GIT_TAG {NEW}\n" in bumped
    again = read_pin(bumped, "cutlass")
    assert [span.line for span in again.literals] == [SET_LINE, GIT_TAG_LINE]


def test_the_diff_shows_the_two_lines() -> None:
    diff = pin_diff(CUTLASS_CMAKELISTS, set_pin(CUTLASS_CMAKELISTS, "cutlass", NEW), "CMakeLists")

    removed = [line for line in diff.splitlines() if line.startswith("-") and "---" not in line]
    assert removed == [
        f'-  set(CUTLASS_REVISION "{OLD}" CACHE STRING "The CUTLASS revision to build with")',
        f"-        GIT_TAG {OLD}",
    ]


def test_crlf_and_the_other_pin_survive() -> None:
    text = CUTLASS_CMAKELISTS.replace("\n", "\r\n")

    bumped = set_pin(text, "cutlass", NEW)

    assert bumped == text.replace(f'"{OLD}" CACHE', f'"{NEW}" CACHE').replace(
        f"GIT_TAG {OLD}", f"GIT_TAG {NEW}"
    )
    assert read_pin(bumped, "vllm-flash-attn").value == FA_SHA


def test_list_pins_reports_the_repeated_line() -> None:
    declared = {
        (pin.dependency, pin.line): pin.repeats
        for pin in list_pins(CUTLASS_CMAKELISTS, filename="CMakeLists.txt")
    }

    assert declared == {
        ("cutlass", line_of("FetchContent_Declare(cutlass SOURCE_DIR")): (),
        ("cutlass", line_of("FetchContent_Declare(\n        cutlass")): (SET_LINE,),
        ("vllm-flash-attn", line_of("vllm-flash-attn SOURCE_DIR") - 1): (),
        ("vllm-flash-attn", line_of("vllm-flash-attn\n          GIT_REPOSITORY") - 1): (),
    }


@pytest.mark.parametrize(
    "written",
    [
        f'message(STATUS "cutlass {OLD}")',  # part of a longer argument
        f"set(X {OLD}-rc1)",
        f"set(X v{OLD})",
        f'set(X "${{{OLD}}}")',
        f"# set(X {OLD})",
        f"#[[ set(X {OLD}) ]]",
    ],
)
def test_a_value_inside_other_text_or_a_comment_is_no_literal(written: str) -> None:
    text = f"{written}\nFetchContent_Declare(c GIT_TAG {OLD})\n"

    assert set_pin(text, "c", NEW) == f"{written}\nFetchContent_Declare(c GIT_TAG {NEW})\n"


@pytest.mark.parametrize(
    ("written", "bumped"),
    [
        (f"set(X {OLD})", f"set(X {NEW})"),
        (f'set(X "{OLD}")', f'set(X "{NEW}")'),
        (f"set(X [=[{OLD}]=])", f"set(X [=[{NEW}]=])"),
        (f'if(T STREQUAL "{OLD}")\nendif()', f'if(T STREQUAL "{NEW}")\nendif()'),
    ],
)
def test_every_form_of_the_value_as_a_whole_argument_is_a_literal(
    written: str, bumped: str
) -> None:
    text = f"FetchContent_Declare(c GIT_TAG {OLD})\n{written}\n"

    assert set_pin(text, "c", NEW) == f"FetchContent_Declare(c GIT_TAG {NEW})\n{bumped}\n"


def test_a_pin_through_a_variable_takes_its_repeats_too() -> None:
    text = (
        f'set(C_REVISION "{OLD}")\n'
        "FetchContent_Declare(c GIT_TAG ${C_REVISION})\n"
        f"set(C_DOCS_TAG {OLD})\n"
    )

    pin = read_pin(text, "c")

    assert (pin.line, [span.line for span in pin.repeats]) == (1, [3])
    assert set_pin(text, "c", NEW) == text.replace(OLD, NEW)


def test_another_pins_value_is_never_this_ones() -> None:
    # Two upstreams at the same tag: each bump moves its own pin only.
    text = (
        f"FetchContent_Declare(a GIT_TAG {OLD})\n"
        f"FetchContent_Declare(b GIT_TAG {OLD})\n"
        f'set(D_TAG "{OLD}")\n'
        "FetchContent_Declare(d GIT_TAG ${D_TAG})\n"
        f"set(A_MIRROR {OLD})\n"
    )

    assert [span.line for span in read_pin(text, "a").literals] == [1, 5]
    assert set_pin(text, "a", NEW).splitlines() == [
        f"FetchContent_Declare(a GIT_TAG {NEW})",
        f"FetchContent_Declare(b GIT_TAG {OLD})",
        f'set(D_TAG "{OLD}")',
        "FetchContent_Declare(d GIT_TAG ${D_TAG})",
        f"set(A_MIRROR {NEW})",
    ]
    assert [span.line for span in read_pin(text, "d").literals] == [3, 5]


def test_another_declaration_without_a_tag_value_takes_nothing() -> None:
    text = (
        f"FetchContent_Declare(a GIT_TAG {OLD})\n"
        "FetchContent_Declare(e GIT_REPOSITORY https://x/e GIT_TAG GIT_PROGRESS TRUE)\n"
        f"set(E {OLD})\n"
    )

    assert [span.line for span in read_pin(text, "a").repeats] == [3]


@pytest.mark.parametrize(
    ("value", "repeated"),
    [
        ("main", False),  # a branch: the word has other uses in CMake
        ("ON", False),
        ("feedfacefeedfacefeedfacefeedfacefeedface", True),  # a sha of letters only
        ("release/2.1", True),
        (FA_SHA, True),
    ],
)
def test_only_a_value_naming_a_release_or_commit_repeats(value: str, repeated: bool) -> None:
    text = f"FetchContent_Declare(c GIT_TAG {value})\nset(X {value})\n"

    pin = read_pin(text, "c")

    assert (len(pin.repeats) == 1) is repeated
    assert set_pin(text, "c", "v9.9.9").count("v9.9.9") == 1 + repeated


def test_setting_the_current_value_changes_nothing() -> None:
    assert set_pin(CUTLASS_CMAKELISTS, "cutlass", OLD) is CUTLASS_CMAKELISTS


def test_a_pin_built_by_hand_has_its_own_token_as_only_literal() -> None:
    pin = Pin("c", OLD, 2, 10, 16, None, None)

    assert pin.literals == (Span(2, 10, 16),)
