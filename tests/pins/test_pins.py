"""Unit tests for the CMake pin reader/editor: every form and every trap."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.core.errors import PermanentError, is_transient
from bot.edit import cmake_pin as pins
from bot.edit.cmake_pin import MSG_SHALLOW_SHA, Pin, PinError, pin_diff, read_pin, set_pin

NEW_SHA = "feedfacefeedfacefeedfacefeedfacefeedface"
NEW_TAG = "v9.9.9"
FILE = "cmake/x.cmake"


def changed_lines(old: str, new: str) -> list[tuple[str, str]]:
    """Pairs of (old line, new line) that differ; both texts must have as many lines."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    assert len(old_lines) == len(new_lines)
    return [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]


def declare(*arguments: str, name: str = "foo", command: str = "FetchContent_Declare") -> str:
    body = "".join(f"  {argument}\n" for argument in arguments)
    return f"{command}(\n  {name}\n{body})\n"


def assert_only_token_changed(old: str, new: str, pin: Pin, value: str) -> None:
    assert new[: pin.start] == old[: pin.start]
    assert new[pin.start : pin.start + len(value)] == value
    assert new[pin.start + len(value) :] == old[pin.end :]


# --- the real shapes ------------------------------------------------------------

FIXTURE_PINS = [
    # file, dependency, value, line, variable, repository
    (
        "vllm_flash_attn.cmake",
        "vllm-flash-attn",
        "5b8c1a7e0f3d2946a1b7c8e9d0f1a2b3c4d5e6f7",
        31,
        None,
        "https://github.com/vllm-project/flash-attention.git",
    ),
    (
        "deepgemm.cmake",
        "deepgemm",
        "a0c4f6e2b8d1357924680ace13579bdf02468ace",
        19,
        None,
        "https://github.com/deepseek-ai/DeepGEMM.git",
    ),
    (
        "flashmla.cmake",
        "flashmla",
        "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
        18,
        None,
        "https://github.com/vllm-project/FlashMLA",
    ),
    (
        "qutlass.cmake",
        "qutlass",
        "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
        16,
        None,
        "https://github.com/IST-DASLab/qutlass.git",
    ),
    (
        "triton_kernels.cmake",
        "triton_kernels",
        "v3.6.0",
        3,
        "DEFAULT_TRITON_KERNELS_TAG",
        "https://github.com/triton-lang/triton.git",
    ),
    (
        "CMakeLists.txt",
        "cutlass",
        "v4.4.2",
        87,
        "CUTLASS_REVISION",
        "https://github.com/nvidia/cutlass.git",
    ),
    (
        "CMakeLists.txt",
        "vllm-flash-attn",
        "96266b1111111111111111111111111111111111",
        213,
        None,
        "https://github.com/vllm-project/flash-attention.git",
    ),
]


@pytest.mark.parametrize(
    ("filename", "dependency", "value", "line", "variable", "repository"), FIXTURE_PINS
)
def test_reads_the_pin_of_each_fixture(
    cmake_fixture: Callable[[str], str],
    filename: str,
    dependency: str,
    value: str,
    line: int,
    variable: str | None,
    repository: str,
) -> None:
    text = cmake_fixture(filename)

    pin = read_pin(text, dependency, filename=filename)

    assert (pin.dependency, pin.value, pin.line) == (dependency, value, line)
    assert (pin.variable, pin.repository) == (variable, repository)
    assert text[pin.start : pin.end] == value
    assert text.count("\n", 0, pin.start) + 1 == line


@pytest.mark.parametrize(("filename", "dependency", "value", "line"), [p[:4] for p in FIXTURE_PINS])
def test_bump_of_each_fixture_changes_only_the_pin_line(
    cmake_fixture: Callable[[str], str], filename: str, dependency: str, value: str, line: int
) -> None:
    text = cmake_fixture(filename)
    # A shallow pin (cutlass, triton_kernels) can only move to another tag.
    new = NEW_TAG if read_pin(text, dependency).shallow else NEW_SHA

    bumped = set_pin(text, dependency, new, filename=filename)

    old_line = text.splitlines(keepends=True)[line - 1]
    assert changed_lines(text, bumped) == [(old_line, old_line.replace(value, new))]
    assert read_pin(bumped, dependency).value == new


def test_variable_pin_edits_the_set_line_not_the_git_tag_line(
    cmake_fixture: Callable[[str], str],
) -> None:
    text = cmake_fixture("CMakeLists.txt")

    bumped = set_pin(text, "cutlass", "v4.5.0")

    assert changed_lines(text, bumped) == [
        ('  set(CUTLASS_REVISION "v4.4.2")\n', '  set(CUTLASS_REVISION "v4.5.0")\n')
    ]


def test_pins_in_a_large_file_are_edited_independently(
    cmake_fixture: Callable[[str], str],
) -> None:
    text = cmake_fixture("CMakeLists.txt")

    both = set_pin(set_pin(text, "cutlass", "v9.9.9"), "vllm-flash-attn", NEW_SHA)

    assert read_pin(both, "cutlass").value == "v9.9.9"
    assert read_pin(both, "vllm-flash-attn").value == NEW_SHA
    assert len(changed_lines(text, both)) == 2


def test_submodules_and_other_quoted_arguments_are_untouched(
    cmake_fixture: Callable[[str], str],
) -> None:
    text = cmake_fixture("deepgemm.cmake")

    bumped = set_pin(text, "deepgemm", NEW_SHA)

    assert f'GIT_TAG "{NEW_SHA}"\n' in bumped  # stays quoted
    assert 'GIT_SUBMODULES "third-party/cutlass" "third-party/fmt"\n' in bumped


def test_trailing_comment_on_the_pin_line_survives(cmake_fixture: Callable[[str], str]) -> None:
    bumped = set_pin(cmake_fixture("qutlass.cmake"), "qutlass", NEW_SHA)

    assert f"    GIT_TAG {NEW_SHA} # keep in sync with the docs\n" in bumped


def test_url_without_git_suffix_is_kept(cmake_fixture: Callable[[str], str]) -> None:
    bumped = set_pin(cmake_fixture("flashmla.cmake"), "flashmla", NEW_SHA)

    assert "GIT_REPOSITORY https://github.com/vllm-project/FlashMLA\n" in bumped


# --- duplicate declarations ---------------------------------------------------------


def test_source_dir_branch_is_not_a_pin(cmake_fixture: Callable[[str], str]) -> None:
    text = cmake_fixture("vllm_flash_attn.cmake")

    pin = read_pin(text, "vllm-flash-attn")

    # Line 22 is the SOURCE_DIR declaration; the pin is in the else() branch.
    assert pin.line == 31


def test_only_source_dir_declarations_means_no_git_tag() -> None:
    text = declare("SOURCE_DIR ${FOO_DIR}") + declare("SOURCE_DIR ${OTHER_DIR}")

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    detail = pins.MSG_NO_GIT_TAG.format(dependency="foo", s="s", lines="1, 5")
    assert str(caught.value) == f"{FILE}: {detail}"


def test_single_declaration_without_git_tag_says_line() -> None:
    text = "include(FetchContent)\n" + declare("URL https://example.invalid/foo.tar.gz")

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    detail = pins.MSG_NO_GIT_TAG.format(dependency="foo", s="", lines="2")
    assert str(caught.value) == f"{FILE}: {detail}"


def test_missing_dependency_is_reported_as_not_found() -> None:
    text = declare("GIT_TAG abc", name="bar")

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    assert str(caught.value) == "dependency 'foo' not found in cmake/x.cmake; it declares: bar"
    detail = pins.MSG_NOT_FOUND.format(dependency="foo", filename=FILE, declared="bar")
    assert str(caught.value) == detail


def test_two_git_tag_declarations_are_ambiguous_and_named() -> None:
    text = "if(A)\n" + declare("GIT_TAG aaa") + "else()\n" + declare("GIT_TAG bbb") + "endif()\n"

    with pytest.raises(PinError) as caught:
        set_pin(text, "foo", "ccc", filename=FILE)

    detail = pins.MSG_AMBIGUOUS.format(dependency="foo", lines="2, 7")
    assert str(caught.value) == f"{FILE}: {detail}"


def test_git_tag_twice_in_one_declaration_is_refused() -> None:
    text = declare("GIT_TAG aaa", "GIT_TAG bbb")

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    assert str(caught.value) == f"{FILE}:1: {pins.MSG_REPEATED_GIT_TAG.format(dependency='foo')}"


@pytest.mark.parametrize(
    ("arguments", "line"),
    [(("GIT_REPOSITORY https://x/y.git", "GIT_TAG"), 4), (("GIT_TAG", "GIT_SHALLOW TRUE"), 3)],
)
def test_git_tag_without_value_is_refused(arguments: tuple[str, ...], line: int) -> None:
    with pytest.raises(PinError) as caught:
        read_pin(declare(*arguments), "foo", filename=FILE)

    assert str(caught.value) == f"{FILE}:{line}: {pins.MSG_MISSING_VALUE.format(dependency='foo')}"


def test_dependency_names_compare_exactly() -> None:
    text = declare("GIT_TAG abc", name="cutlass")

    with pytest.raises(PinError, match="not found"):
        read_pin(text, "Cutlass")
    with pytest.raises(PinError, match="not found"):
        read_pin(text, "cutlass-extra")


@pytest.mark.parametrize("command", ["fetchcontent_declare", "FETCHCONTENT_DECLARE"])
def test_command_names_are_case_insensitive(command: str) -> None:
    text = declare("GIT_TAG abc", command=command)

    assert set_pin(text, "foo", "def") == declare("GIT_TAG def", command=command)


def test_other_commands_named_like_the_dependency_are_ignored() -> None:
    text = "ExternalProject_Add(foo GIT_TAG zzz)\n" + declare("GIT_TAG abc")

    assert read_pin(text, "foo").value == "abc"


# --- value forms ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("GIT_TAG abc123", "GIT_TAG def456"),
        ('GIT_TAG "abc123"', 'GIT_TAG "def456"'),
        ("GIT_TAG [[abc123]]", "GIT_TAG [[def456]]"),
        ("GIT_TAG [==[abc123]==]", "GIT_TAG [==[def456]==]"),
        ("GIT_TAG abc123  ", "GIT_TAG def456  "),  # trailing whitespace kept
        ("GIT_TAG\tabc123\t", "GIT_TAG\tdef456\t"),
        ("GIT_TAG abc123# no space before the comment", "GIT_TAG def456# no space before..."),
    ],
)
def test_literal_forms_keep_their_delimiters(written: str, expected: str) -> None:
    if expected.endswith("..."):
        expected = expected.removesuffix("...") + " the comment"
    text = declare("GIT_REPOSITORY https://github.com/o/foo.git", written)

    bumped = set_pin(text, "foo", "def456")

    assert bumped == declare("GIT_REPOSITORY https://github.com/o/foo.git", expected)


def test_value_after_a_comment_on_the_git_tag_line() -> None:
    text = "FetchContent_Declare(foo GIT_TAG # the pin follows\n    abc123\n)\n"

    pin = read_pin(text, "foo")

    assert (pin.value, pin.line, pin.repository) == ("abc123", 2, None)
    assert set_pin(text, "foo", "x1") == text.replace("abc123", "x1")


def test_value_written_on_one_line_with_the_call() -> None:
    text = "FetchContent_Declare(foo GIT_REPOSITORY https://x/foo GIT_TAG v1.0)\n"

    assert set_pin(text, "foo", "v1.1") == text.replace("v1.0", "v1.1")


@pytest.mark.parametrize(
    ("reference", "setter"),
    [
        ("${FOO_TAG}", 'set(FOO_TAG "v1.0")'),
        ('"${FOO_TAG}"', 'set(FOO_TAG "v1.0")'),
        ("${FOO_TAG}", "set(FOO_TAG v1.0)"),
        ('"${FOO_TAG}"', "SET(FOO_TAG v1.0)"),
        ("${FOO_TAG}", "set(FOO_TAG v1.0 PARENT_SCOPE)"),
        ("${FOO_TAG}", 'set(FOO_TAG "v1.0" CACHE STRING "foo revision")'),
        ("${FOO_TAG}", 'set(FOO_TAG v1.0 CACHE STRING "foo revision" FORCE)'),
        ("${FOO_TAG}", "set(\n  FOO_TAG\n  v1.0 # the tag\n)"),
    ],
)
def test_variable_forms_edit_the_set_value(reference: str, setter: str) -> None:
    text = f"{setter}\n" + declare(f"GIT_TAG {reference}")

    pin = read_pin(text, "foo")
    bumped = set_pin(text, "foo", "v2.0")

    assert (pin.value, pin.variable) == ("v1.0", "FOO_TAG")
    assert bumped == f"{setter.replace('v1.0', 'v2.0')}\n" + declare(f"GIT_TAG {reference}")


def test_set_after_the_declaration_is_found() -> None:
    text = declare("GIT_TAG ${FOO_TAG}") + 'set(FOO_TAG "v1.0")\n'

    assert read_pin(text, "foo").line == 5


def test_set_of_a_similar_variable_is_not_used() -> None:
    text = 'set(FOO_TAG_OLD "v0.9")\n' + declare("GIT_TAG ${FOO_TAG}")

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    assert str(caught.value) == f"{FILE}:4: {pins.MSG_VARIABLE_UNSET.format(variable='FOO_TAG')}"


def test_variable_set_twice_is_refused_with_lines() -> None:
    text = (
        "if(DEFINED ENV{FOO_TAG})\n"
        "  set(FOO_TAG $ENV{FOO_TAG})\n"
        "else()\n"
        '  set(FOO_TAG "v1.0")\n'
        "endif()\n" + declare("GIT_TAG ${FOO_TAG}")
    )

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    detail = pins.MSG_VARIABLE_SET_TWICE.format(variable="FOO_TAG", lines="2, 4")
    assert str(caught.value) == f"{FILE}: {detail}"


@pytest.mark.parametrize(
    ("setter", "reason"),
    [
        ("set(FOO_TAG)", pins.REASON_EMPTY_SET),
        ("set(FOO_TAG v1 v2)", pins.REASON_MANY_VALUES.format(count=2)),
        ("set(FOO_TAG v1 CACHE)", pins.REASON_MANY_VALUES.format(count=2)),
        ('set(FOO_TAG v1 CACHE WEIRD "doc")', pins.REASON_MANY_VALUES.format(count=4)),
        ("set(FOO_TAG (v1))", pins.REASON_MANY_VALUES.format(count=3)),
    ],
)
def test_set_forms_the_bot_does_not_understand(setter: str, reason: str) -> None:
    text = declare("GIT_TAG ${FOO_TAG}") + f"\n{setter}\n"

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    detail = pins.MSG_SET_FORM.format(variable="FOO_TAG", reason=reason)
    assert str(caught.value) == f"{FILE}:6: {detail}"


@pytest.mark.parametrize(
    ("setter", "value", "reason"),
    [
        ("set(FOO_TAG ${OTHER})", "${OTHER}", pins.REASON_VARIABLE_IN_SET),
        ('set(FOO_TAG "v${MAJOR}.0")', "v${MAJOR}.0", pins.REASON_VARIABLE_IN_SET),
        ('set(FOO_TAG "")', "", pins.REASON_EMPTY),
        ("set(FOO_TAG $<IF:$<CONFIG:Debug>,a,b>)", "$<IF:$<CONFIG:Debug>,a,b>", None),
        ('set(FOO_TAG "a;b")', "a;b", pins.REASON_SPECIAL),
    ],
)
def test_set_values_the_bot_cannot_edit(setter: str, value: str, reason: str | None) -> None:
    text = f"{setter}\n" + declare("GIT_TAG ${FOO_TAG}")

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    detail = pins.MSG_UNEDITABLE.format(
        keyword="set(FOO_TAG)", value=value, reason=reason or pins.REASON_GENERATOR_EXPRESSION
    )
    assert str(caught.value) == f"{FILE}:1: {detail}"


@pytest.mark.parametrize(
    ("written", "value", "reason"),
    [
        ("v${X}", "v${X}", pins.REASON_MIXED),
        ('"${A}${B}"', "${A}${B}", pins.REASON_MIXED),
        ("$ENV{FOO_TAG}", "$ENV{FOO_TAG}", pins.REASON_SPECIAL),
        ("$<$<CONFIG:Debug>:dev>", "$<$<CONFIG:Debug>:dev>", pins.REASON_GENERATOR_EXPRESSION),
        ('""', "", pins.REASON_EMPTY),
        ("[[]]", "", pins.REASON_EMPTY),
        ('"a b"', "a b", pins.REASON_SPECIAL),
        ('"a\\"b"', 'a\\"b', pins.REASON_SPECIAL),
        ("a\\;b", "a\\;b", pins.REASON_SPECIAL),
        ("[[${X}]]", "${X}", pins.REASON_SPECIAL),
    ],
)
def test_git_tag_values_the_bot_cannot_edit(written: str, value: str, reason: str) -> None:
    text = "\n" * 11 + f"FetchContent_Declare(foo GIT_TAG {written})\n"

    with pytest.raises(PinError) as caught:
        set_pin(text, "foo", "v1", filename=FILE)

    detail = pins.MSG_UNEDITABLE.format(keyword="GIT_TAG", value=value, reason=reason)
    assert str(caught.value) == f"{FILE}:12: {detail}"


def test_mixed_value_message_matches_the_documented_shape() -> None:
    text = "\n" * 11 + "FetchContent_Declare(foo GIT_TAG v${X})\n"

    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    assert str(caught.value).startswith(
        "cmake/x.cmake:12: GIT_TAG value 'v${X}' is not a form the bot can edit"
    )


# --- comments and layout ------------------------------------------------------------


def test_comments_mentioning_git_tag_and_declarations_are_ignored() -> None:
    text = (
        "# FetchContent_Declare(foo GIT_TAG 0000000)\n"
        "#[[ FetchContent_Declare(foo\n  GIT_TAG 1111111) ]]\n"
        "#[=[ ]] FetchContent_Declare(foo GIT_TAG 2222222) ]=]\n"
        "FetchContent_Declare(\n"
        "  foo\n"
        "  # GIT_TAG 3333333 was the old pin\n"
        "  #[[ GIT_TAG 4444444 ]] GIT_REPOSITORY https://github.com/o/foo.git\n"
        "  GIT_TAG 5555555 # GIT_TAG 6666666\n"
        ")\n"
    )

    bumped = set_pin(text, "foo", "7777777")

    assert bumped == text.replace("5555555 #", "7777777 #")
    assert read_pin(text, "foo").repository == "https://github.com/o/foo.git"


def test_fork_repository_is_reported_but_never_changed() -> None:
    fork = "https://github.com/someone/flash-attention.git"
    text = declare(f"GIT_REPOSITORY {fork}", "GIT_TAG abc", name="vllm-flash-attn")

    pin = read_pin(text, "vllm-flash-attn")
    bumped = set_pin(text, "vllm-flash-attn", "def")

    assert pin.repository == fork
    assert f"GIT_REPOSITORY {fork}\n" in bumped
    assert bumped == text.replace("GIT_TAG abc", "GIT_TAG def")


def test_crlf_line_endings_survive(cmake_fixture: Callable[[str], str]) -> None:
    text = cmake_fixture("vllm_flash_attn.cmake").replace("\n", "\r\n")

    pin = read_pin(text, "vllm-flash-attn")
    bumped = set_pin(text, "vllm-flash-attn", NEW_SHA)

    assert pin.line == 31
    assert bumped == text.replace(pin.value, NEW_SHA)
    assert bumped.count("\r\n") == text.count("\r\n") == bumped.count("\n")


def test_crlf_with_variable_and_trailing_whitespace() -> None:
    text = 'set(FOO_TAG "v1.0")  \r\n' + declare("GIT_TAG ${FOO_TAG}  ").replace("\n", "\r\n")

    bumped = set_pin(text, "foo", "v1.1")

    assert bumped == text.replace("v1.0", "v1.1")


def test_byte_order_mark_is_allowed() -> None:
    text = "\ufeff" + declare("GIT_TAG abc")

    assert set_pin(text, "foo", "def") == "\ufeff" + declare("GIT_TAG def")


def test_legacy_unquoted_and_escaped_arguments_parse() -> None:
    text = (
        'add_definitions(-DNAME="a b" -DOTHER=x\\ y)\n'
        'message(STATUS "a \\"quoted\\" (paren" \\) [x] [=[ ) ]=])\n'
        "if((A OR B) AND (C))\n" + declare("GIT_TAG abc") + "endif()\n"
    )

    assert read_pin(text, "foo").value == "abc"


# --- parse errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ('message("never closed)\n\n', 1, "unterminated quoted argument"),
        ("\n#[[ never closed\n", 2, "unterminated bracket comment"),
        ("\n\nset(X [=[ a ]]\n", 3, "unterminated bracket argument"),
        ("set(X a\n\n", 1, "unterminated command (missing ')')"),
        ("set(X a", 1, "unterminated command (missing ')')"),  # an argument ends the text
        ("set(X)\n)\n", 2, "unexpected ')'"),
        ("set (X)\nfoo bar\n", 2, "expected '(' after 'foo'"),
    ],
)
def test_unparsable_files_name_file_and_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(PinError) as caught:
        read_pin(text, "foo", filename=FILE)

    assert str(caught.value) == f"{FILE}:{line}: {pins.MSG_PARSE.format(problem=problem)}"


# --- set_pin contract --------------------------------------------------------------


def test_setting_the_current_value_returns_the_text_unchanged(
    cmake_fixture: Callable[[str], str],
) -> None:
    text = cmake_fixture("CMakeLists.txt")

    assert set_pin(text, "cutlass", "v4.4.2") is text


@pytest.mark.parametrize(
    "value",
    ["", "a b", "a\tb", "a\nb", '"a"', "'a'", "a$b", "a;b", "a(b", "a)b", "a#b", "a\\b", "a[b"],
)
def test_invalid_new_values_are_refused(value: str) -> None:
    with pytest.raises(PinError) as caught:
        set_pin(declare("GIT_TAG abc"), "foo", value)

    assert str(caught.value) == pins.MSG_INVALID_NEW_VALUE.format(value=value)


def test_new_value_is_checked_before_the_file() -> None:
    # An invalid value is the caller's mistake whatever the file looks like.
    with pytest.raises(PinError, match="invalid pin value"):
        set_pin("not cmake (", "foo", "a b")


def test_pin_errors_are_permanent() -> None:
    with pytest.raises(PinError) as caught:
        read_pin("", "foo")

    assert isinstance(caught.value, PermanentError)
    assert not is_transient(caught.value)


@pytest.mark.parametrize(
    ("value", "plain"),
    [("v4.4.2", True), ("a" * 40, True), ("release/2.1", True), ("", False), ("a\x00", False)],
)
def test_is_plain_value(value: str, plain: bool) -> None:
    assert pins.is_plain_value(value) is plain


# --- pin_diff ---------------------------------------------------------------------


def test_diff_of_equal_texts_is_empty() -> None:
    assert pin_diff("a\n", "a\n", "x") == ""


def test_diff_has_git_headers_and_one_changed_line(cmake_fixture: Callable[[str], str]) -> None:
    text = cmake_fixture("vllm_flash_attn.cmake")
    bumped = set_pin(text, "vllm-flash-attn", NEW_SHA)

    diff = pin_diff(text, bumped, "cmake/external_projects/vllm_flash_attn.cmake")

    lines = diff.splitlines()
    assert lines[:3] == [
        "--- a/cmake/external_projects/vllm_flash_attn.cmake",
        "+++ b/cmake/external_projects/vllm_flash_attn.cmake",
        "@@ -28,7 +28,7 @@",
    ]
    assert [line for line in lines[3:] if line[:1] in "-+"] == [
        "-          GIT_TAG 5b8c1a7e0f3d2946a1b7c8e9d0f1a2b3c4d5e6f7",
        f"+          GIT_TAG {NEW_SHA}",
    ]


def test_diff_marks_a_missing_final_newline() -> None:
    diff = pin_diff("keep\nold", "keep\nnew", "f.cmake")

    assert diff == (
        "--- a/f.cmake\n+++ b/f.cmake\n@@ -1,2 +1,2 @@\n keep\n"
        "-old\n\\ No newline at end of file\n+new\n\\ No newline at end of file\n"
    )


def test_diff_keeps_crlf_in_content_lines() -> None:
    diff = pin_diff("a\r\nold\r\n", "a\r\nnew\r\n", "f")

    assert "-old\r\n+new\r\n" in diff


SHALLOW = """\
FetchContent_Declare(
  cutlass
  GIT_REPOSITORY https://github.com/nvidia/cutlass.git
  GIT_TAG {tag}
  GIT_SHALLOW {shallow}
)
"""


@pytest.mark.parametrize("shallow", ["TRUE", "ON", "1", "yes", "Y"])
def test_a_shallow_pin_refuses_a_commit_sha(shallow: str) -> None:
    text = SHALLOW.format(tag="v4.4.2", shallow=shallow)

    with pytest.raises(PinError) as raised:
        set_pin(text, "cutlass", NEW_SHA, filename="CMakeLists.txt")

    message = MSG_SHALLOW_SHA.format(dependency="cutlass", value=NEW_SHA, line=5)
    assert str(raised.value) == f"CMakeLists.txt: {message}"


@pytest.mark.parametrize(("shallow", "new"), [("TRUE", "v4.5.0"), ("FALSE", NEW_SHA)])
def test_a_shallow_pin_takes_a_tag_and_a_deep_one_a_sha(shallow: str, new: str) -> None:
    text = SHALLOW.format(tag="v4.4.2", shallow=shallow)

    assert read_pin(set_pin(text, "cutlass", new), "cutlass").value == new


def test_the_real_cutlass_pin_refuses_a_sha(cmake_fixture: Callable[[str], str]) -> None:
    text = cmake_fixture("CMakeLists.txt")
    assert read_pin(text, "cutlass").shallow
    with pytest.raises(PinError, match="GIT_SHALLOW TRUE"):
        set_pin(text, "cutlass", NEW_SHA, filename="CMakeLists.txt")
