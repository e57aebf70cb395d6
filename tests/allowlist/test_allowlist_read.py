"""Reading the allowlist with ast, and every shape the reader refuses."""

from __future__ import annotations

import pytest

from bot.edit import allowlist as al
from bot.edit.allowlist import Allowlist, AllowlistError, read_allowlist

from .helpers import DEEP_GEMM, FA2, FA3, ORIGINAL_BLOCK, read_fixture, script_with


def test_reads_the_fixture_script() -> None:
    script = read_fixture()

    found = read_allowlist(script, filename="check-torch-abi.py")

    assert found.variable == "ALLOWED_UNSTABLE_LIBRARIES"
    assert found.entries == (FA2, FA3, DEEP_GEMM)
    assert script[found.start : found.end] == ORIGINAL_BLOCK.split(" = ", 1)[1]
    assert script.splitlines()[found.line - 1].startswith("ALLOWED_UNSTABLE_LIBRARIES: tuple")


def test_reads_a_plain_assignment_with_another_name_and_non_ascii_text() -> None:
    text = 'ROCM_ONLY = ("_rocm_C.abi3.so", "ünï/中*.so")\n'

    found = read_allowlist(text, variable="ROCM_ONLY")

    assert found == Allowlist("ROCM_ONLY", ("_rocm_C.abi3.so", "ünï/中*.so"), 12, len(text) - 1, 1)


def test_offsets_are_characters_with_crlf_and_a_byte_order_mark() -> None:
    text = '\ufeff# é\r\nX = (\r\n    "a",\r\n    "b",\r\n)\r\n'

    found = read_allowlist(text, variable="X")

    assert text[found.start : found.end] == '(\r\n    "a",\r\n    "b",\r\n)'
    assert (found.entries, found.line) == (("a", "b"), 2)


def test_escapes_and_prefixes_are_decoded() -> None:
    text = """X = ('a"b', "c\\\\d", r"e\\f", "\\u00e9")\n"""

    assert read_allowlist(text, variable="X").entries == ('a"b', "c\\d", "e\\f", "é")


def test_empty_tuple() -> None:
    assert read_allowlist("X: tuple[str, ...] = ()\n", variable="X").entries == ()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('X: tuple[str, ...]\nX = ("a",)\n', id="bare-annotation-first"),
        pytest.param('def f() -> None:\n    X = 1\n\n\nX = ("a",)\n', id="function-local"),
        pytest.param('class C:\n    X = 1\n\n\nX = ("a",)\n', id="class-attribute"),
        pytest.param('X = ("a",)\nY = [X for X in "ab"]\n', id="comprehension-target"),
    ],
)
def test_bindings_in_other_scopes_do_not_count(text: str) -> None:
    assert read_allowlist(text, variable="X").entries == ("a",)


def test_missing_variable() -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist(read_fixture(), variable="ALLOWED", filename="f.py")

    assert str(caught.value) == al.MSG_NOT_FOUND.format(filename="f.py", variable="ALLOWED")


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        pytest.param('X = ("a",)\nX = ("b",)\n', "1, 2", id="assigned-twice"),
        pytest.param('X = ("a",)\nif True:\n    X = ()\n', "1, 3", id="reassigned-in-if"),
        pytest.param('X = ("a",)\nX += ("b",)\n', "1, 2", id="augmented"),
        pytest.param('import X\nX = ("a",)\n', "1, 2", id="import"),
        pytest.param('for X in ():\n    pass\nX = ("a",)\n', "1, 3", id="for-target"),
        pytest.param('def X() -> None:\n    pass\n\n\nX = ("a",)\n', "1, 5", id="def"),
    ],
)
def test_two_bindings_are_refused(text: str, lines: str) -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist(text, variable="X", filename="f.py")

    where = "f.py:" + lines.split(",")[0]
    assert str(caught.value) == al.MSG_ASSIGNED_TWICE.format(where=where, variable="X", lines=lines)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('if True:\n    X = ("a",)\n', id="inside-if"),
        pytest.param('X = Y = ("a",)\n', id="chained"),
        pytest.param('X, Y = ("a",), ("b",)\n', id="unpacking"),
    ],
)
def test_unusual_assignments_are_refused(text: str) -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist(text, variable="X", filename="f.py")

    line = 2 if text.startswith("if") else 1
    assert str(caught.value) == al.MSG_FORM.format(where=f"f.py:{line}", variable="X")


@pytest.mark.parametrize(
    ("value", "found"),
    [
        pytest.param('["a", "b"]', '["a", "b"]', id="list"),
        pytest.param('tuple(["a"])', 'tuple(["a"])', id="call"),
        pytest.param("OTHER", "OTHER", id="name"),
        pytest.param('("a",) + ("b",)', '("a",) + ("b",)', id="sum"),
        pytest.param('"a"', '"a"', id="string"),
    ],
)
def test_non_tuple_values_are_refused(value: str, found: str) -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist(f"X = {value}\n", variable="X", filename="f.py")

    assert str(caught.value) == al.MSG_NOT_TUPLE.format(where="f.py:1", variable="X", found=found)


@pytest.mark.parametrize(
    ("entry", "found", "line"),
    [
        pytest.param('"a" + "b"', '"a" + "b"', 3, id="concatenation"),
        pytest.param('f"a{B}"', 'f"a{B}"', 3, id="f-string"),
        pytest.param("NAME", "NAME", 3, id="name"),
        pytest.param('b"a.so"', 'b"a.so"', 3, id="bytes"),
        pytest.param("*OTHER", "*OTHER", 3, id="starred"),
        pytest.param('"a" "b"', '"a" "b"', 3, id="implicit-concatenation"),
        pytest.param('"a"\n    "b"', '"a" "b"', 3, id="implicit-concatenation-over-lines"),
    ],
)
def test_entries_that_are_not_plain_literals_are_refused(entry: str, found: str, line: int) -> None:
    text = f'B = 1\nX = (\n    {entry},\n    "ok",\n)\n'

    with pytest.raises(AllowlistError) as caught:
        read_allowlist(text, variable="X", filename="f.py")

    message = al.MSG_NOT_LITERAL.format(where=f"f.py:{line}", variable="X", found=found)
    assert str(caught.value) == message


def test_a_tuple_without_parentheses_is_refused() -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist('X = "a", "b"\n', variable="X", filename="f.py")

    assert str(caught.value) == al.MSG_NOT_PARENTHESIZED.format(where="f.py:1", variable="X")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param('X = (("a"), "b")\n', al.REASON_NESTED_PARENTHESES, id="parenthesized-entry"),
        pytest.param('X = ("a", """b\nc""")\n', al.REASON_MULTILINE_ENTRY, id="multi-line-entry"),
        pytest.param(
            'X = (\n    "a"  # one\n    ,  # two\n)\n', al.REASON_TWO_COMMENTS, id="comments"
        ),
    ],
)
def test_layouts_the_editor_cannot_follow_are_refused(text: str, reason: str) -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist(text, variable="X", filename="f.py")

    line = 3 if reason == al.REASON_TWO_COMMENTS else 1
    message = al.MSG_LAYOUT.format(where=f"f.py:{line}", variable="X", reason=reason)
    assert str(caught.value) == message


def test_a_syntax_error_names_file_and_line() -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist(script_with("X = (\n"), filename="f.py")

    assert str(caught.value).startswith("f.py:")
    assert "cannot parse Python" in str(caught.value)


def test_bare_carriage_returns_are_refused() -> None:
    with pytest.raises(AllowlistError) as caught:
        read_allowlist('X = ("a",)\rY = 1\n', variable="X", filename="f.py")

    assert str(caught.value) == al.MSG_LONE_CR.format(filename="f.py")
