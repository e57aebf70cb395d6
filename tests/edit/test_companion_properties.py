"""Laws of the companion editor, on generated files of the five kinds.

For every file: set then read gives the new value; set changes only the value's span;
set with the current value changes nothing; CRLF files stay CRLF. A shell file may also
assign the variable from the script's arguments (an option branch): that line never changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from bot.config.models import CompanionConfig
from bot.edit.companion import CompanionError, read_companion, set_companion

NAME = "DEEPGEMM_GIT_REF"

# What set_companion accepts: ref-like values (tags, shas, branches).
values = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._/+@-]{0,30}", fullmatch=True)
# YAML reads an unquoted 1.5 or yes as a number or a boolean: plain values start with a v.
plain_yaml_values = st.from_regex(r"v[0-9][A-Za-z0-9._/+@-]{0,20}", fullmatch=True)
newlines = st.sampled_from(["\n", "\r\n"])
trailing = st.sampled_from(["", "  ", "\t", "  # kept in sync with the pin"])
# Assignments from the script's arguments, as option branches write them.
overrides = st.sampled_from(
    [
        f'            {NAME}="$2"',
        f"    {NAME}=$OPTARG",
        f'            {NAME}="${{1#*=}}"; shift',
        f"  local {NAME}=$1  # a function's argument",
    ]
)
# PyYAML refuses a tab after a quoted scalar.
yaml_trailing = st.sampled_from(["", "  ", "  # kept in sync with the pin"])


@dataclass(frozen=True)
class Case:
    text: str
    companion: CompanionConfig
    value: str
    newline: str
    quote: str  # "" for a plain value


def _join(draw: st.DrawFn, lines: list[str], newline: str) -> str:
    decoys = draw(st.permutations(lines))
    return newline.join(decoys) + draw(st.sampled_from(["", newline]))


@st.composite
def shell_files(draw: st.DrawFn) -> Case:
    value, newline = draw(values), draw(newlines)
    quote = draw(st.sampled_from(['"', "'", ""]))
    keyword = draw(st.sampled_from(["", "export ", "readonly ", "  local "]))
    target = f"{keyword}{NAME}={quote}{value}{quote}{draw(trailing)}"
    lines = [target, f'# {NAME}="old"', "OTHER_REF=main", 'echo "$DEEPGEMM_GIT_REF"', ""]
    # The option branch of vLLM's install script: an override, never the value.
    lines += draw(st.lists(overrides, max_size=2))
    text = "#!/usr/bin/env bash" + newline + _join(draw, lines, newline)
    return Case(
        text, CompanionConfig(file="tools/install.sh", variable=NAME), value, newline, quote
    )


@st.composite
def cmake_files(draw: st.DrawFn) -> Case:
    value, newline = draw(values), draw(newlines)
    quote = draw(st.sampled_from(['"', ""]))
    tail = draw(st.sampled_from(["", " PARENT_SCOPE", ' CACHE STRING "the ref"']))
    target = f"set({NAME} {quote}{value}{quote}{tail}){draw(trailing)}"
    lines = [target, f"# set({NAME} old)", "set(OTHER_REF main)", "project(x)", ""]
    text = _join(draw, lines, newline)
    return Case(
        text, CompanionConfig(file="cmake/refs.cmake", variable=NAME), value, newline, quote
    )


@st.composite
def python_files(draw: st.DrawFn) -> Case:
    value, newline = draw(values), draw(newlines)
    quote = draw(st.sampled_from(['"', "'"]))
    annotation = draw(st.sampled_from(["", ": str", ": Final[str]"]))
    target = f"{NAME}{annotation} = {quote}{value}{quote}{draw(trailing)}"
    lines = [target, f'# {NAME} = "old"', "OTHER_REF = 'main'", "import os", ""]
    text = _join(draw, lines, newline)
    return Case(text, CompanionConfig(file="tools/refs.py", variable=NAME), value, newline, quote)


@st.composite
def yaml_files(draw: st.DrawFn) -> Case:
    newline = draw(newlines)
    quote = draw(st.sampled_from(['"', "'", ""]))
    value = draw(plain_yaml_values if not quote else values)
    ref = f"    ref: {quote}{value}{quote}{draw(yaml_trailing)}"
    deepgemm = ["  deepgemm:", *draw(st.permutations([ref, "    url: https://x.invalid/dg"]))]
    body = draw(st.permutations([deepgemm, ["  other: {ref: v0.0.1}"], ["  # ref: v0"]]))
    lines = ["# refs", "deps:", *(line for block in body for line in block), "top: 1"]
    text = newline.join(lines) + draw(st.sampled_from(["", newline]))
    companion = CompanionConfig(file="ci/refs.yaml", variable="deps.deepgemm.ref")
    return Case(text, companion, value, newline, quote)


@st.composite
def pattern_files(draw: st.DrawFn) -> Case:
    value, newline = draw(values), draw(newlines)
    lines = [f"ARG DEEPGEMM_REF={value}{draw(trailing)}", "# ARG OTHER_REF=v1", "FROM x", ""]
    text = _join(draw, lines, newline)
    companion = CompanionConfig(file="docker/Dockerfile", pattern=r"^ARG DEEPGEMM_REF=(\S+)")
    return Case(text, companion, value, newline, "")


files = st.one_of(shell_files(), cmake_files(), python_files(), yaml_files(), pattern_files())


def _settable(case: Case, value: str) -> bool:
    """Whether ``value`` can be written there: anywhere, but unquoted in YAML only a string."""
    if case.companion.resolved_format != "yaml" or case.quote:
        return True
    return isinstance(yaml.safe_load(value), str)


@given(files)
def test_read_finds_the_value_where_it_is(case: Case) -> None:
    found = read_companion(case.text, case.companion, filename=case.companion.file)

    assert found.value == case.value
    assert case.text[found.start : found.end] == case.value
    assert found.line == case.text.count("\n", 0, found.start) + 1


@given(files)
def test_setting_the_current_value_changes_nothing(case: Case) -> None:
    edited = set_companion(case.text, case.companion, case.value, filename=case.companion.file)

    assert edited == case.text


@given(files, values)
def test_set_replaces_only_the_value_and_reads_back(case: Case, new: str) -> None:
    filename = case.companion.file
    old = read_companion(case.text, case.companion, filename=filename)

    if not _settable(case, new):
        with pytest.raises(CompanionError, match="would not read back"):
            set_companion(case.text, case.companion, new, filename=filename)
        return
    edited = set_companion(case.text, case.companion, new, filename=filename)

    again = read_companion(edited, case.companion, filename=filename)
    assert again.value == new
    assert again.start == old.start
    assert edited[: old.start] == case.text[: old.start]
    assert edited[old.start + len(new) :] == case.text[old.end :]
    assert edited.count("\r\n") == case.text.count("\r\n")
    assert edited.count("\n") == case.text.count("\n")
    if case.newline == "\r\n":
        assert edited.count("\n") == edited.count("\r\n")
