"""Shell companions: ``NAME="value"`` lines, as tools/install_deepgemm.sh holds the DeepGEMM ref."""

from __future__ import annotations

import pytest

from bot.config.models import CompanionConfig
from bot.core.errors import PermanentError
from bot.edit import companion as comp
from bot.edit.companion import CompanionError, CompanionValue, read_companion, set_companion

FILE = "tools/install_deepgemm.sh"
SHA = "a0c4f6e2b8d1357924680ace13579bdf02468ace"
NEW = "feedfacefeedfacefeedfacefeedfacefeedface"
COMPANION = CompanionConfig(file=FILE, variable="DEEPGEMM_GIT_REF")

INSTALL_SCRIPT = f"""#!/usr/bin/env bash
# Installs DeepGEMM; the ref is kept in sync with cmake/external_projects/deepgemm.cmake.
set -euo pipefail

DEEPGEMM_GIT_REPO="https://github.com/deepseek-ai/DeepGEMM.git"
# DEEPGEMM_GIT_REF="0000000000000000000000000000000000000000"  (the old one)
DEEPGEMM_GIT_REF="{SHA}"

git clone --recursive "$DEEPGEMM_GIT_REPO" deepgemm
git -C deepgemm checkout "$DEEPGEMM_GIT_REF"
"""


def read(text: str, name: str = "DEEPGEMM_GIT_REF") -> CompanionValue:
    return read_companion(text, CompanionConfig(file=FILE, variable=name), filename=FILE)


def refusal(text: str, name: str = "DEEPGEMM_GIT_REF") -> str:
    with pytest.raises(CompanionError) as caught:
        read(text, name)
    return str(caught.value)


def not_literal(line: int, reason: str, name: str = "DEEPGEMM_GIT_REF") -> str:
    return comp.MSG_NOT_LITERAL.format(filename=FILE, line=line, name=name, reason=reason)


def test_reads_the_install_script_ref() -> None:
    found = read(INSTALL_SCRIPT)

    assert found == CompanionValue(
        SHA, 7, INSTALL_SCRIPT.index(SHA), INSTALL_SCRIPT.index(SHA) + 40
    )


def test_sets_the_install_script_ref_on_its_line_only() -> None:
    edited = set_companion(INSTALL_SCRIPT, COMPANION, NEW, filename=FILE)

    assert edited == INSTALL_SCRIPT.replace(f'REF="{SHA}"', f'REF="{NEW}"')
    assert "0000000000000000000000000000000000000000" in edited  # the comment is left alone
    assert set_companion(INSTALL_SCRIPT, COMPANION, SHA, filename=FILE) == INSTALL_SCRIPT


@pytest.mark.parametrize(
    "line",
    [
        'DEEPGEMM_GIT_REF="v1.2.3"',
        "DEEPGEMM_GIT_REF='v1.2.3'",
        "DEEPGEMM_GIT_REF=v1.2.3",
        "export DEEPGEMM_GIT_REF=v1.2.3",
        'readonly DEEPGEMM_GIT_REF="v1.2.3"',
        "    local DEEPGEMM_GIT_REF='v1.2.3'",
        '\texport\tDEEPGEMM_GIT_REF="v1.2.3"',
        'DEEPGEMM_GIT_REF="v1.2.3"   ',
        'DEEPGEMM_GIT_REF="v1.2.3"  # the pinned tag',
        "DEEPGEMM_GIT_REF=v1.2.3\t# the pinned tag",
    ],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_reads_every_plain_form(line: str, newline: str) -> None:
    text = f"#!/bin/sh{newline}A=1{newline}{line}{newline}B=2{newline}"

    found = read(text)

    assert (found.value, found.line) == ("v1.2.3", 3)
    assert text[found.start : found.end] == "v1.2.3"
    edited = set_companion(text, COMPANION, "v1.3.0", filename=FILE)
    assert edited == text.replace("v1.2.3", "v1.3.0")


def test_reads_the_last_line_without_a_newline() -> None:
    assert read("A=1\nDEEPGEMM_GIT_REF=v1").value == "v1"


@pytest.mark.parametrize(
    "text", ["DEEPGEMM_GIT_REF=", "DEEPGEMM_GIT_REF=\n", 'DEEPGEMM_GIT_REF=""\n']
)
def test_an_empty_value_is_read_and_can_be_filled(text: str) -> None:
    found = read(text)

    assert found.value == ""
    assert read(set_companion(text, COMPANION, "v1", filename=FILE)).value == "v1"


def test_an_unquoted_hash_inside_a_word_is_part_of_the_value() -> None:
    assert read("DEEPGEMM_GIT_REF=abc#def\n").value == "abc#def"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("DEEPGEMM_GIT_REF=$(git rev-parse HEAD)", comp.REASON_SHELL_EXPANSION),
        ("DEEPGEMM_GIT_REF=${DEFAULT_REF}", comp.REASON_SHELL_EXPANSION),
        ('DEEPGEMM_GIT_REF="${DEFAULT_REF}"', comp.REASON_SHELL_EXPANSION),
        ('DEEPGEMM_GIT_REF="v$X"', comp.REASON_SHELL_EXPANSION),
        ("DEEPGEMM_GIT_REF=`cat ref`", comp.REASON_SHELL_EXPANSION),
        ('DEEPGEMM_GIT_REF="`cat ref`"', comp.REASON_SHELL_EXPANSION),
        ("DEEPGEMM_GIT_REF=~/ref", comp.REASON_SHELL_EXPANSION),
        ('DEEPGEMM_GIT_REF="a\\"b"', comp.REASON_SHELL_QUOTING),
        ("DEEPGEMM_GIT_REF=a\\ b", comp.REASON_SHELL_QUOTING),
        ('DEEPGEMM_GIT_REF=v"1"', comp.REASON_SHELL_QUOTING),
        ("DEEPGEMM_GIT_REF=v'1'", comp.REASON_SHELL_QUOTING),
        ('DEEPGEMM_GIT_REF="v1', comp.REASON_SHELL_UNTERMINATED),
        ("DEEPGEMM_GIT_REF='v1", comp.REASON_SHELL_UNTERMINATED),
        ("DEEPGEMM_GIT_REF=v1 make", comp.REASON_SHELL_TRAILING),
        ('DEEPGEMM_GIT_REF="v1"rc', comp.REASON_SHELL_TRAILING),
        ('DEEPGEMM_GIT_REF="v1"#rc', comp.REASON_SHELL_TRAILING),
        ("DEEPGEMM_GIT_REF=v1; make", comp.REASON_SHELL_TRAILING),
        ("DEEPGEMM_GIT_REF=(v1 v2)", comp.REASON_SHELL_TRAILING),
        ("DEEPGEMM_GIT_REF= make", comp.REASON_SHELL_TRAILING),
    ],
)
def test_values_that_are_not_plain_literals_are_refused(line: str, reason: str) -> None:
    assert refusal(f"set -e\n{line}\n") == not_literal(2, reason)


def test_an_unterminated_quote_does_not_reach_into_the_next_line() -> None:
    assert refusal('DEEPGEMM_GIT_REF="v1\n"\n') == not_literal(1, comp.REASON_SHELL_UNTERMINATED)


def test_a_missing_variable_lists_the_names_the_file_sets() -> None:
    text = (
        "A=1\nexport B=2\n# DEEPGEMM_GIT_REF=x\n  #DEEPGEMM_GIT_REF=y\nA=3\n"
        "DEEPGEMM_GIT_REF_OLD=z\nXDEEPGEMM_GIT_REF=w\nDEEPGEMM_GIT_REF+=v\n"
        "echo DEEPGEMM_GIT_REF=u\n"
    )

    assert refusal(text) == (
        "DEEPGEMM_GIT_REF is not set in tools/install_deepgemm.sh "
        "(it sets: A, B, DEEPGEMM_GIT_REF_OLD, XDEEPGEMM_GIT_REF)"
    )


def test_a_missing_variable_in_a_file_setting_nothing() -> None:
    expected = comp.MSG_NOT_FOUND.format(name="DEEPGEMM_GIT_REF", filename=FILE, names=comp.NOTHING)
    assert refusal("#!/bin/sh\necho hi\n") == expected


def test_a_long_list_of_names_is_cut_short() -> None:
    text = "".join(f"NAME_{index}=x\n" for index in range(25))

    names = ", ".join(f"NAME_{index}" for index in range(20)) + comp.MORE_NAMES.format(count=5)
    expected = comp.MSG_NOT_FOUND.format(name="DEEPGEMM_GIT_REF", filename=FILE, names=names)
    assert refusal(text) == expected
    assert expected.endswith("NAME_19 and 5 more)")


def test_a_variable_set_twice_is_refused_with_its_lines() -> None:
    text = 'DEEPGEMM_GIT_REF="a"\nif x; then\n  DEEPGEMM_GIT_REF="b"\nfi\n'

    assert refusal(text) == comp.MSG_SET_TWICE.format(
        name="DEEPGEMM_GIT_REF", filename=FILE, lines="1, 3"
    )


def test_refusals_are_permanent() -> None:
    assert issubclass(CompanionError, PermanentError)
