"""read_variable / set_variable (a companion's ``set(NAME value)``), and the names a
"not found" refusal lists."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.edit import cmake_pin as pins
from bot.edit.cmake_pin import PinError, VariableValue, read_pin, read_variable, set_variable

FILE = "cmake/x.cmake"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('set(DEEPGEMM_REF "abc123")\n', "abc123"),
        ("set(DEEPGEMM_REF abc123)\n", "abc123"),
        ("set(DEEPGEMM_REF [=[abc123]=])\n", "abc123"),
        ('set(DEEPGEMM_REF "abc123" CACHE STRING "the ref")\n', "abc123"),
        ("set(DEEPGEMM_REF abc123 PARENT_SCOPE)\n", "abc123"),
        ("SET(DEEPGEMM_REF abc123) # the ref\n", "abc123"),
    ],
)
def test_reads_the_value_of_set(text: str, value: str) -> None:
    found = read_variable(text, "DEEPGEMM_REF", filename=FILE)

    assert found == VariableValue(
        "DEEPGEMM_REF", value, 1, text.index(value), text.index(value) + 6
    )


def test_set_variable_replaces_only_the_value() -> None:
    text = '# set(REF "old")\r\nset(OTHER x)\r\nset(REF   "v1.0.0"  )  # keep\r\n'

    edited = set_variable(text, "REF", "v1.1.0", filename=FILE)

    assert edited == text.replace('"v1.0.0"', '"v1.1.0"')
    assert read_variable(edited, "REF", filename=FILE).line == 3
    assert set_variable(text, "REF", "v1.0.0", filename=FILE) == text


def test_cmakelists_sets_the_cutlass_revision(cmake_fixture: Callable[[str], str]) -> None:
    text = cmake_fixture("CMakeLists.txt")

    found = read_variable(text, "CUTLASS_REVISION", filename="CMakeLists.txt")

    pin = read_pin(text, "cutlass", filename="CMakeLists.txt")
    assert (found.value, found.line, found.start, found.end) == (
        pin.value,
        pin.line,
        pin.start,
        pin.end,
    )


def test_an_unset_variable_lists_the_names_the_file_sets() -> None:
    text = "set(A 1)\nset(B 2)\nset(A 3)\nset((x) y)\nlist(APPEND C d)\n# set(D 4)\n"

    with pytest.raises(PinError) as caught:
        read_variable(text, "REF", filename=FILE)

    assert str(caught.value) == "REF is not set in cmake/x.cmake (it sets: A, B)"
    assert str(caught.value) == pins.MSG_VARIABLE_NOT_FOUND.format(
        variable="REF", filename=FILE, names="A, B"
    )


def test_an_unset_variable_in_a_file_setting_nothing() -> None:
    with pytest.raises(PinError) as caught:
        read_variable("project(x)\n", "REF", filename=FILE)

    assert str(caught.value) == pins.MSG_VARIABLE_NOT_FOUND.format(
        variable="REF", filename=FILE, names=pins.NOTHING
    )


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        (
            "set(REF a)\nset(REF b)\n",
            f"{FILE}: " + pins.MSG_VARIABLE_SET_TWICE.format(variable="REF", lines="1, 2"),
        ),
        (
            "set(REF a b)\n",
            f"{FILE}:1: "
            + pins.MSG_SET_FORM.format(
                variable="REF", reason=pins.REASON_MANY_VALUES.format(count=2)
            ),
        ),
        (
            "set(REF ${OTHER})\n",
            f"{FILE}:1: "
            + pins.MSG_UNEDITABLE.format(
                keyword="set(REF)", value="${OTHER}", reason=pins.REASON_VARIABLE_IN_SET
            ),
        ),
        (
            "set(REF a\n",
            f"{FILE}:1: " + pins.MSG_PARSE.format(problem="unterminated command (missing ')')"),
        ),
    ],
)
def test_uncertain_values_are_refused(text: str, detail: str) -> None:
    with pytest.raises(PinError) as caught:
        read_variable(text, "REF", filename=FILE)

    assert str(caught.value) == detail


@pytest.mark.parametrize("value", ["", "a b", "v1;v2", "${X}", 'a"b'])
def test_set_variable_refuses_values_cmake_would_read_differently(value: str) -> None:
    with pytest.raises(PinError) as caught:
        set_variable("set(REF a)\n", "REF", value, filename=FILE)

    assert str(caught.value) == pins.MSG_INVALID_NEW_VALUE.format(value=value)


def test_not_found_dependency_lists_the_declared_names(
    cmake_fixture: Callable[[str], str],
) -> None:
    filename = "cmake/external_projects/deepgemm.cmake"

    with pytest.raises(PinError) as caught:
        read_pin(cmake_fixture("deepgemm.cmake"), "deep_gemm", filename=filename)

    assert str(caught.value) == (
        "dependency 'deep_gemm' not found in cmake/external_projects/deepgemm.cmake; "
        "it declares: deepgemm"
    )


def test_not_found_dependency_lists_each_name_once_in_file_order(
    cmake_fixture: Callable[[str], str],
) -> None:
    with pytest.raises(PinError) as caught:
        read_pin(cmake_fixture("CMakeLists.txt"), "flashmla", filename="CMakeLists.txt")

    assert str(caught.value) == pins.MSG_NOT_FOUND.format(
        dependency="flashmla",
        filename="CMakeLists.txt",
        declared="json, cutlass, vllm-flash-attn",
    )


def test_not_found_in_a_file_declaring_nothing() -> None:
    with pytest.raises(PinError) as caught:
        read_pin("set(A 1)\n", "foo", filename=FILE)

    assert str(caught.value) == pins.MSG_NOT_FOUND.format(
        dependency="foo", filename=FILE, declared=pins.NOTHING
    )
