"""Editing the allowlist: exact expected text, and ruff agrees with every output."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bot.edit import allowlist as al
from bot.edit.allowlist import AllowlistError, allowlist_diff, edit_allowlist, python_literal

from .helpers import (
    DEEP_GEMM,
    FA2,
    FA3,
    assert_ruff_formatted,
    edit_checked,
    read_fixture,
    script_with,
)

PREFIX = "ALLOWED_UNSTABLE_LIBRARIES: tuple[str, ...] = "
PATH = ".buildkite/check-torch-abi.py"
DG_310 = "third_party/deep_gemm/_C.cpython-310-x86_64-linux-gnu.so"
DG_311 = "third_party/deep_gemm/_C.cpython-311-x86_64-linux-gnu.so"


def changed_lines(diff: str) -> tuple[int, int]:
    """(added, removed) lines of a unified diff, headers excluded."""
    lines = diff.splitlines()[2:]
    return (
        sum(line.startswith("+") for line in lines),
        sum(line.startswith("-") for line in lines),
    )


def test_the_fixture_script_is_ruff_formatted(tmp_path: Path) -> None:
    assert_ruff_formatted([read_fixture()], tmp_path)


def test_fa3_history_shrinks_the_list_the_way_vllm_did(tmp_path: Path) -> None:
    created = read_fixture()

    # 08-01: FA2 goes; one line less.
    after_fa2 = edit_checked(created, tmp_path, remove=[FA2])
    assert after_fa2 == script_with(f'{PREFIX}(\n    "{FA3}",\n    "{DEEP_GEMM}",\n)')
    assert changed_lines(allowlist_diff(created, after_fa2, PATH)) == (0, 1)

    # 08-06: FA3 goes; the last entry collapses onto one line: +1/-4.
    after_fa3 = edit_checked(after_fa2, tmp_path, remove=[FA3])
    assert after_fa3 == script_with(f'{PREFIX}("{DEEP_GEMM}",)')
    assert changed_lines(allowlist_diff(after_fa2, after_fa3, PATH)) == (1, 4)

    # And the day deep_gemm is stable too: an empty tuple.
    emptied = edit_checked(after_fa3, tmp_path, remove=[DEEP_GEMM])
    assert emptied == script_with(f"{PREFIX}()")
    assert changed_lines(allowlist_diff(after_fa3, emptied, PATH)) == (1, 1)


def test_removing_two_of_three_collapses_at_once(tmp_path: Path) -> None:
    new = edit_checked(read_fixture(), tmp_path, remove=[FA3, FA2])

    assert new == script_with(f'{PREFIX}("{DEEP_GEMM}",)')


def test_narrowing_a_glob_puts_the_exact_paths_in_its_place(tmp_path: Path) -> None:
    text = script_with(f'{PREFIX}(\n    "{DEEP_GEMM}",\n    "_C.abi3.so",\n)')

    new = edit_checked(text, tmp_path, replace={DEEP_GEMM: [DG_310, DG_311]})

    assert new == script_with(f'{PREFIX}(\n    "{DG_310}",\n    "{DG_311}",\n    "_C.abi3.so",\n)')
    assert changed_lines(allowlist_diff(text, new, PATH)) == (2, 1)


def test_narrowing_the_single_collapsed_entry_splits_the_tuple(tmp_path: Path) -> None:
    # The one-element comma becomes a magic trailing comma once there are two.
    text = script_with(f'{PREFIX}("{DEEP_GEMM}",)')

    new = edit_checked(text, tmp_path, replace={DEEP_GEMM: [DG_310, DG_311]})

    assert new == script_with(f'{PREFIX}(\n    "{DG_310}",\n    "{DG_311}",\n)')


def test_remove_and_replace_together(tmp_path: Path) -> None:
    new = edit_checked(read_fixture(), tmp_path, remove=[FA2], replace={FA3: ["a/b.so"]})

    assert new == script_with(f'{PREFIX}(\n    "a/b.so",\n    "{DEEP_GEMM}",\n)')


def test_one_to_zero(tmp_path: Path) -> None:
    new = edit_checked(script_with(f'{PREFIX}("{DEEP_GEMM}",)'), tmp_path, remove=[DEEP_GEMM])

    assert new == script_with(f"{PREFIX}()")


def test_another_variable_is_edited_and_the_allowlist_left_alone(tmp_path: Path) -> None:
    text = read_fixture() + '\n\nROCM_ONLY = (\n    "_C.abi3.so",\n    "_rocm_C.abi3.so",\n)\n'

    new = edit_checked(text, tmp_path, variable="ROCM_ONLY", remove=["_C.abi3.so"])

    assert new == read_fixture() + '\n\nROCM_ONLY = ("_rocm_C.abi3.so",)\n'


def test_crlf_is_kept_when_collapsing(tmp_path: Path) -> None:
    crlf = read_fixture().replace("\n", "\r\n")

    new = edit_checked(crlf, tmp_path, remove=[FA2, FA3])

    assert new == script_with(f'{PREFIX}("{DEEP_GEMM}",)').replace("\n", "\r\n")


def test_crlf_is_used_for_new_lines(tmp_path: Path) -> None:
    crlf = script_with(f'{PREFIX}("{DEEP_GEMM}",)').replace("\n", "\r\n")

    new = edit_checked(crlf, tmp_path, replace={DEEP_GEMM: [DG_310, DG_311]})

    expected = script_with(f'{PREFIX}(\n    "{DG_310}",\n    "{DG_311}",\n)')
    assert new == expected.replace("\n", "\r\n")


def test_a_byte_order_mark_is_kept() -> None:
    # ruff itself drops the mark; the editor leaves that to whoever formats the file.
    text = "\ufeff" + script_with(f'{PREFIX}(\n    "{FA3}",\n    "{DEEP_GEMM}",\n)')

    new = edit_allowlist(text, remove=[FA3])

    assert new == "\ufeff" + script_with(f'{PREFIX}("{DEEP_GEMM}",)')


# --- comments ------------------------------------------------------------------


def test_trailing_comments_stay_with_their_entry_or_go_with_its_line(tmp_path: Path) -> None:
    text = script_with(
        f"{PREFIX}(\n"
        f'    "{FA2}",  # until vllm-project/flash-attention#120\n'
        f'    "{FA3}",  # hopper\n'
        f'    "{DEEP_GEMM}",  # per-Python builds\n'
        ")"
    )

    new = edit_checked(text, tmp_path, remove=[FA2])

    assert new == script_with(
        f'{PREFIX}(\n    "{FA3}",  # hopper\n    "{DEEP_GEMM}",  # per-Python builds\n)'
    )


def test_a_kept_comment_keeps_a_single_entry_split(tmp_path: Path) -> None:
    text = script_with(f'{PREFIX}(\n    "{FA3}",\n    "{DEEP_GEMM}",  # per-Python builds\n)')

    new = edit_checked(text, tmp_path, remove=[FA3])

    assert new == script_with(f'{PREFIX}(\n    "{DEEP_GEMM}",  # per-Python builds\n)')


def test_a_single_entry_collapses_when_its_comment_went_with_the_removed_line(
    tmp_path: Path,
) -> None:
    text = script_with(f'{PREFIX}(\n    "{FA3}",  # hopper\n    "{DEEP_GEMM}",\n)')

    new = edit_checked(text, tmp_path, remove=[FA3])

    assert new == script_with(f'{PREFIX}("{DEEP_GEMM}",)')


def test_comments_above_a_removed_entry_move_to_the_next_one(tmp_path: Path) -> None:
    text = script_with(
        f"{PREFIX}(\n"
        "    # CUDA\n"
        f'    "{FA3}",\n'
        f'    "{DEEP_GEMM}",\n'
        "    # ROCm\n"
        '    "_rocm_C.abi3.so",\n'
        "    # end of list\n"
        ")"
    )

    new = edit_checked(text, tmp_path, remove=[FA3, "_rocm_C.abi3.so"])

    assert new == script_with(
        f'{PREFIX}(\n    # CUDA\n    "{DEEP_GEMM}",\n    # ROCm\n    # end of list\n)'
    )


def test_no_entries_left_but_comments_keeps_them_inside_the_parentheses(tmp_path: Path) -> None:
    text = script_with(f'{PREFIX}(  # shared by CUDA and ROCm\n    # CUDA\n    "{DEEP_GEMM}",\n)')

    new = edit_checked(text, tmp_path, remove=[DEEP_GEMM])

    assert new == script_with(f"{PREFIX}(  # shared by CUDA and ROCm\n    # CUDA\n)")


def test_a_comment_after_the_opening_parenthesis_keeps_the_tuple_split(tmp_path: Path) -> None:
    text = script_with(f'{PREFIX}(  # shared by CUDA and ROCm\n    "{FA3}",\n    "{DEEP_GEMM}",\n)')

    new = edit_checked(text, tmp_path, remove=[FA3])

    assert new == script_with(f'{PREFIX}(  # shared by CUDA and ROCm\n    "{DEEP_GEMM}",\n)')


def test_blank_lines_inside_the_tuple_disappear_as_with_ruff(tmp_path: Path) -> None:
    text = script_with(f'{PREFIX}(\n    "{FA2}",\n\n    "{FA3}",\n    "{DEEP_GEMM}",\n)')

    new = edit_checked(text, tmp_path, remove=[FA2])

    assert new == script_with(f'{PREFIX}(\n    "{FA3}",\n    "{DEEP_GEMM}",\n)')


# --- one line or one entry per line ------------------------------------------------


def test_one_line_entries_stay_on_one_line_without_a_magic_comma(tmp_path: Path) -> None:
    text = script_with(f'{PREFIX}("a.so", "b.so", "c.so")')

    new = edit_checked(text, tmp_path, remove=["b.so"])

    assert new == script_with(f'{PREFIX}("a.so", "c.so")')


def test_one_line_entries_split_when_they_no_longer_fit(tmp_path: Path) -> None:
    text = script_with(f'{PREFIX}("a.so", "b.so")')

    new = edit_checked(text, tmp_path, replace={"a.so": [DG_310, DG_311]})

    assert new == script_with(f'{PREFIX}(\n    "{DG_310}",\n    "{DG_311}",\n    "b.so",\n)')


@pytest.mark.parametrize(("line_length", "collapsed"), [(79, True), (78, False)])
def test_a_single_entry_collapses_only_when_the_line_fits(
    tmp_path: Path, line_length: int, collapsed: bool
) -> None:
    # Only the tuple's own line is at stake: the rest of the script is
    # formatted for 88 columns, so it is left out here.
    one_line = f'{PREFIX}("{DEEP_GEMM}",)'
    assert len(one_line) == 79
    text = f'{PREFIX}(\n    "{FA3}",\n    "{DEEP_GEMM}",\n)\n'

    new = edit_checked(text, tmp_path, remove=[FA3], line_length=line_length)

    split = f'{PREFIX}(\n    "{DEEP_GEMM}",\n)'
    assert new == (one_line if collapsed else split) + "\n"


@pytest.mark.parametrize(
    ("comment", "collapsed"),
    [
        ("# noqa: E501", True),
        ("# type: ignore[assignment]", True),
        ("# see the ROCm job  # noqa: E501", False),
        ("# ok # noqa", True),
        ("# nosec B602", True),
        ("# Nosec B602", False),  # ruff matches nosec case-sensitively
        ("# shared by CUDA and ROCm", False),
    ],
)
def test_a_comment_after_the_tuple_counts_unless_it_is_a_pragma(
    tmp_path: Path, comment: str, collapsed: bool
) -> None:
    # 79 columns collapsed; the comment's own width decides at line length 88.
    text = script_with(f'{PREFIX}(\n    "{FA3}",\n    "{DEEP_GEMM}",\n)  {comment}')

    new = edit_checked(text, tmp_path, remove=[FA3])

    split = f'{PREFIX}(\n    "{DEEP_GEMM}",\n)  {comment}'
    assert new == script_with(f'{PREFIX}("{DEEP_GEMM}",)  {comment}' if collapsed else split)


def test_wide_characters_count_two_columns(tmp_path: Path) -> None:
    wide = "中" * 10  # 20 columns, 10 characters
    text = f'X = (\n    "{wide}",\n    "b",\n)\n'

    assert edit_checked(text, tmp_path, variable="X", remove=["b"], line_length=29) == (
        f'X = ("{wide}",)\n'
    )
    assert edit_checked(text, tmp_path, variable="X", remove=["b"], line_length=28) == (
        f'X = (\n    "{wide}",\n)\n'
    )


def test_combining_characters_take_no_column(tmp_path: Path) -> None:
    accented = "e" + "\u0301" * 4 + "abcdefghijklmnopqrs"  # 20 columns, 24 characters
    text = f'X = (\n    "{accented}",\n    "b",\n)\n'

    assert edit_checked(text, tmp_path, variable="X", remove=["b"], line_length=29) == (
        f'X = ("{accented}",)\n'
    )
    assert edit_checked(text, tmp_path, variable="X", remove=["b"], line_length=28) == (
        f'X = (\n    "{accented}",\n)\n'
    )


def test_a_file_without_line_breaks_gets_unix_ones() -> None:
    new = edit_allowlist('X = ("a", "b")', variable="X", replace={"a": ["c" * 40, "d" * 40]})

    assert new == f'X = (\n    "{"c" * 40}",\n    "{"d" * 40}",\n    "b",\n)'


# --- literals, duplicates ---------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("plain/_C*.so", '"plain/_C*.so"'),
        ('a"b', "'a\"b'"),
        ("a'b", '"a\'b"'),
        ("a'b\"c", '"a\'b\\"c"'),
        ('a"b"c\'d', "'a\"b\"c\\'d'"),
        ("c\\d", '"c\\\\d"'),
        ("ünï/中.so", '"ünï/中.so"'),
    ],
)
def test_new_patterns_are_written_as_ruff_writes_them(
    tmp_path: Path, pattern: str, literal: str
) -> None:
    assert python_literal(pattern) == literal
    assert ast.literal_eval(literal) == pattern

    new = edit_checked(
        'X = (\n    "a",\n)\n', tmp_path, variable="X", replace={"a": [pattern, "b"]}
    )

    assert new == f'X = (\n    {literal},\n    "b",\n)\n'


def test_kept_entries_keep_their_literal_as_written(tmp_path: Path) -> None:
    text = 'X = (\n    \'say "hi"\',\n    "\\u00e9",\n    "drop",\n)\n'

    new = edit_checked(text, tmp_path, variable="X", remove=["drop"])

    assert new == 'X = (\n    \'say "hi"\',\n    "\\u00e9",\n)\n'


def test_duplicates_brought_by_a_replacement_are_dropped_first_kept(tmp_path: Path) -> None:
    text = 'X = (\n    "a",\n    "b",  # kept? no: the replacement listed it first\n    "c",\n)\n'

    new = edit_checked(text, tmp_path, variable="X", replace={"a": ["b", "x", "x"]})

    assert new == 'X = (\n    "b",\n    "x",\n    "c",\n)\n'


def test_duplicates_already_in_the_file_are_not_this_edits_business(tmp_path: Path) -> None:
    text = 'X = (\n    "a",\n    "b",\n    "a",\n    "c",\n)\n'

    new = edit_checked(text, tmp_path, variable="X", remove=["c"])

    assert new == 'X = (\n    "a",\n    "b",\n    "a",\n)\n'


def test_a_replacement_may_keep_the_pattern_itself(tmp_path: Path) -> None:
    text = 'X = (\n    \'a"\',  # why\n    "z",\n)\n'

    new = edit_checked(text, tmp_path, variable="X", replace={'a"': ['a"', "a2"]})

    assert new == 'X = (\n    \'a"\',  # why\n    "a2",\n    "z",\n)\n'


def test_removing_a_repeated_pattern_removes_every_copy(tmp_path: Path) -> None:
    new = edit_checked('X = ("a", "b", "a")\n', tmp_path, variable="X", remove=["a"])

    assert new == 'X = ("b",)\n'


# --- no-ops and refusals -------------------------------------------------------------


def test_an_empty_edit_returns_the_input() -> None:
    text = script_with(f'{PREFIX}(\n    "{FA2}"  ,\n)')  # not even ruff-formatted

    assert edit_allowlist(text) == text
    assert edit_allowlist(text, replace={FA2: [FA2]}) == text


def test_an_edit_that_changes_nothing_returns_the_input() -> None:
    text = 'X = (\n    "a",\n\n    "b",\n)\n'

    assert edit_allowlist(text, variable="X", replace={"a": ["a", "b"]}) == text


def test_unknown_patterns_are_named() -> None:
    with pytest.raises(AllowlistError) as caught:
        edit_allowlist(
            read_fixture(),
            remove=[FA2, "nope.so"],
            replace={"other/*.so": ["x.so"]},
            filename=PATH,
        )

    patterns = "'nope.so', 'other/*.so'"
    message = al.MSG_UNKNOWN_PATTERN.format(
        where=f"{PATH}:18", variable="ALLOWED_UNSTABLE_LIBRARIES", patterns=patterns
    )
    assert str(caught.value) == message


def test_unknown_variable() -> None:
    with pytest.raises(AllowlistError) as caught:
        edit_allowlist(read_fixture(), variable="ALLOWED", remove=[FA2], filename=PATH)

    assert str(caught.value) == al.MSG_NOT_FOUND.format(filename=PATH, variable="ALLOWED")


def test_removing_and_replacing_the_same_pattern_is_refused() -> None:
    with pytest.raises(AllowlistError) as caught:
        edit_allowlist(read_fixture(), remove=[FA2], replace={FA2: ["x.so"]}, filename=PATH)

    message = al.MSG_REMOVE_AND_REPLACE.format(where=f"{PATH}:18", patterns=repr(FA2))
    assert str(caught.value) == message


def test_an_empty_replacement_is_refused() -> None:
    with pytest.raises(AllowlistError) as caught:
        edit_allowlist(read_fixture(), replace={FA2: []}, filename=PATH)

    assert str(caught.value) == al.MSG_EMPTY_REPLACEMENT.format(where=f"{PATH}:18", pattern=FA2)


@pytest.mark.parametrize("pattern", ["", "a\nb", "tab\there", "nul\x00"])
def test_patterns_that_cannot_be_an_entry_are_refused(pattern: str) -> None:
    with pytest.raises(AllowlistError) as caught:
        edit_allowlist(read_fixture(), replace={FA2: ["ok.so", pattern]})

    assert str(caught.value) == al.MSG_INVALID_PATTERN.format(pattern=pattern)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param('X = ("a", "b"); Y = 1\n', al.REASON_CODE_AFTER, id="code-after"),
        pytest.param('Y = 1; X = ("a", "b")\n', al.REASON_NOT_AT_START, id="code-before"),
        pytest.param('X = \\\n    ("a", "b")\n', al.REASON_NOT_AT_START, id="continuation"),
        pytest.param('X = (("a", "b"))\n', al.REASON_EXTRA_PARENTHESES, id="double-parentheses"),
    ],
)
def test_shapes_around_the_tuple_the_editor_will_not_touch(text: str, reason: str) -> None:
    with pytest.raises(AllowlistError) as caught:
        edit_allowlist(text, variable="X", remove=["a"], filename="f.py")

    message = al.MSG_LAYOUT.format(where="f.py:1", variable="X", reason=reason)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('X = ("a" + "b", "c")\n', id="concatenation"),
        pytest.param('X = (f"{Y}", "c")\n', id="f-string"),
        pytest.param('X = (Y, "c")\n', id="name"),
        pytest.param('X = tuple(["a", "c"])\n', id="call"),
        pytest.param('X = ("a", "c")\nX = ("c",)\n', id="two-assignments"),
    ],
)
def test_the_editor_refuses_what_the_reader_refuses(text: str) -> None:
    with pytest.raises(AllowlistError):
        edit_allowlist(text, variable="X", remove=["c"])


def test_allowlist_diff_is_empty_for_equal_texts_and_git_like_otherwise() -> None:
    old = read_fixture()
    new = edit_allowlist(old, remove=[FA2])

    assert allowlist_diff(old, old, PATH) == ""
    diff = allowlist_diff(old, new, PATH)
    assert diff.startswith(f"--- a/{PATH}\n+++ b/{PATH}\n@@ ")
    assert f'\n-    "{FA2}",\n' in diff
