"""CMake and pattern companions, and what every companion edit refuses to write."""

from __future__ import annotations

import pytest

from bot.config.models import CompanionConfig
from bot.edit import cmake_pin as pins
from bot.edit import companion as comp
from bot.edit.companion import CompanionError, CompanionValue, read_companion, set_companion

CMAKE_FILE = "cmake/versions.cmake"
TEXT_FILE = "docker/Dockerfile"


def refusal(text: str, companion: CompanionConfig) -> str:
    with pytest.raises(CompanionError) as caught:
        read_companion(text, companion, filename=companion.file)
    return str(caught.value)


# --- CMake ----------------------------------------------------------------------


@pytest.mark.parametrize("file", [CMAKE_FILE, "CMakeLists.txt", "cmake/versions.txt"])
def test_reads_and_sets_a_cmake_variable(file: str) -> None:
    companion = CompanionConfig(file=file, variable="CUTLASS_REVISION", format="cmake")
    text = '# set(CUTLASS_REVISION "v0")\r\nset(CUTLASS_REVISION "v4.4.2" CACHE STRING "x")\r\n'

    found = read_companion(text, companion, filename=file)

    assert found == CompanionValue("v4.4.2", 2, text.index("v4.4.2"), text.index("v4.4.2") + 6)
    edited = set_companion(text, companion, "v4.5.0", filename=file)
    assert edited == text.replace('"v4.4.2"', '"v4.5.0"')


def test_cmake_refusals_carry_the_pin_editors_words() -> None:
    companion = CompanionConfig(file=CMAKE_FILE, variable="CUTLASS_REVISION")

    assert refusal("set(OTHER 1)\n", companion) == pins.MSG_VARIABLE_NOT_FOUND.format(
        variable="CUTLASS_REVISION", filename=CMAKE_FILE, names="OTHER"
    )
    detail = pins.MSG_VARIABLE_SET_TWICE.format(variable="CUTLASS_REVISION", lines="1, 2")
    twice = "set(CUTLASS_REVISION a)\nset(CUTLASS_REVISION b)\n"
    assert refusal(twice, companion) == f"{CMAKE_FILE}: {detail}"
    assert refusal("set(CUTLASS_REVISION a b)\n", companion).startswith(f"{CMAKE_FILE}:1: ")
    assert refusal("set(CUTLASS_REVISION ${X})\n", companion).endswith(pins.REASON_VARIABLE_IN_SET)


# --- pattern --------------------------------------------------------------------

DOCKERFILE = "FROM ubuntu:24.04\r\nARG DEEPGEMM_REF=a0c4f6e\r\nRUN echo ${DEEPGEMM_REF}\r\n"
ARG = CompanionConfig(file=TEXT_FILE, pattern=r"^ARG DEEPGEMM_REF=(\S+)")


def test_reads_and_sets_the_one_match_of_a_pattern() -> None:
    found = read_companion(DOCKERFILE, ARG, filename=TEXT_FILE)

    assert found == CompanionValue("a0c4f6e", 2, 36, 43)
    edited = set_companion(DOCKERFILE, ARG, "feedfac", filename=TEXT_FILE)
    assert edited == DOCKERFILE.replace("=a0c4f6e", "=feedfac")
    assert set_companion(DOCKERFILE, ARG, "a0c4f6e", filename=TEXT_FILE) == DOCKERFILE


def test_a_pattern_matching_nothing_is_refused() -> None:
    companion = CompanionConfig(file=TEXT_FILE, pattern=r"^ARG FLASHMLA_REF=(\S+)")

    assert refusal(DOCKERFILE, companion) == comp.MSG_PATTERN_NONE.format(
        pattern=r"^ARG FLASHMLA_REF=(\S+)", filename=TEXT_FILE
    )


def test_a_pattern_matching_several_times_is_refused_with_the_lines() -> None:
    companion = CompanionConfig(file=TEXT_FILE, pattern=r"DEEPGEMM_REF=(\w+)")

    assert refusal(DOCKERFILE + "ENV DEEPGEMM_REF=x\n", companion) == (
        comp.MSG_PATTERN_MANY.format(
            pattern=r"DEEPGEMM_REF=(\w+)", count=2, filename=TEXT_FILE, lines="2, 4"
        )
    )


def test_a_pattern_whose_group_did_not_take_part_is_refused() -> None:
    # The config takes one group, even one that may not take part in the match.
    companion = CompanionConfig(file=TEXT_FILE, pattern=r"^ARG DEEPGEMM_REF=(?:v(\d+)|\w+)")

    assert refusal(DOCKERFILE, companion) == comp.MSG_PATTERN_NO_GROUP.format(
        filename=TEXT_FILE, line=2, pattern=companion.pattern
    )


@pytest.mark.parametrize("pattern", [r"^ARG DEEPGEMM_REF=(.*)$", r"^ARG DEEPGEMM_REF=(\S+\s+RUN)"])
def test_a_value_across_a_line_break_is_refused(pattern: str) -> None:
    companion = CompanionConfig(file=TEXT_FILE, pattern=pattern)

    assert refusal(DOCKERFILE, companion) == comp.MSG_PATTERN_LINE_BREAK.format(
        filename=TEXT_FILE, line=2, pattern=pattern
    )


def test_an_empty_match_can_be_filled() -> None:
    companion = CompanionConfig(file=TEXT_FILE, pattern=r"^ARG REF=(\S*)")

    assert set_companion("ARG REF=\n", companion, "v1", filename=TEXT_FILE) == "ARG REF=v1\n"


def test_a_value_the_pattern_would_not_find_again_is_not_written() -> None:
    hex_only = CompanionConfig(file=TEXT_FILE, pattern=r"^ARG DEEPGEMM_REF=([0-9a-f]+)")
    with pytest.raises(CompanionError) as caught:
        set_companion(DOCKERFILE, hex_only, "v1.0.0", filename=TEXT_FILE)

    problem = comp.MSG_PATTERN_NONE.format(pattern=hex_only.pattern, filename=TEXT_FILE)
    assert str(caught.value) == comp.MSG_NOT_READ_BACK.format(
        value="v1.0.0", filename=TEXT_FILE, problem=problem
    )


def test_a_value_the_pattern_would_read_differently_is_not_written() -> None:
    companion = CompanionConfig(file=TEXT_FILE, pattern=r"^ARG DEEPGEMM_REF=([0-9a-f]+)")

    with pytest.raises(CompanionError) as caught:
        set_companion(DOCKERFILE, companion, "abc-rc1", filename=TEXT_FILE)

    problem = comp.MSG_READS_OTHER.format(value="abc")
    assert str(caught.value) == comp.MSG_NOT_READ_BACK.format(
        value="abc-rc1", filename=TEXT_FILE, problem=problem
    )
    assert str(caught.value) == (
        "writing 'abc-rc1' to docker/Dockerfile would not read back: "
        "the file would hold 'abc' there"
    )


# --- new values -------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "",
        " v1",
        "v1 ",
        "v 1",
        'v"1',
        "v'1",
        "$X",
        "v\\1",
        "-rc1",
        ".v1",
        "v1\n",
        "v1;",
        "vé",
        "v`1`",
    ],
)
def test_values_that_are_not_plain_refs_are_never_written(value: str) -> None:
    with pytest.raises(CompanionError) as caught:
        set_companion(DOCKERFILE, ARG, value, filename=TEXT_FILE)

    assert str(caught.value) == comp.MSG_INVALID_NEW_VALUE.format(value=value)


@pytest.mark.parametrize(
    "value", ["v4.4.2", "a0c4f6e", "release/2.1", "v1.0.0+cu12", "x@y", "a_b-c"]
)
def test_ref_like_values_are_written(value: str) -> None:
    edited = set_companion(DOCKERFILE, ARG, value, filename=TEXT_FILE)

    assert read_companion(edited, ARG, filename=TEXT_FILE).value == value
