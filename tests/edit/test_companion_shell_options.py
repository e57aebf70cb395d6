"""A shell companion assigned twice: the default, and the option that overrides it.

vLLM's ``tools/install_deepgemm.sh`` sets ``DEEPGEMM_GIT_REF="<sha>"`` and, in its
``--ref)`` option branch, ``DEEPGEMM_GIT_REF="$2"``. The second is no value of the pin:
the bot edits the default and leaves the option branch alone.
"""

from __future__ import annotations

import pytest

from bot.config.models import CompanionConfig
from bot.edit import companion as comp
from bot.edit.companion import CompanionError, read_companion, set_companion
from tests.pin_literal_shapes import DEEPGEMM_SCRIPT_FILE as FILE
from tests.pin_literal_shapes import default_ref_line, install_deepgemm

SHA = "a0c4f6e2b8d1357924680ace13579bdf02468ace"
NEW = "0f5f2662027f0db05d4e3f6a94e56e2d8fc45c51"
NAME = "DEEPGEMM_GIT_REF"
COMPANION = CompanionConfig(file=FILE, variable=NAME)


def read(text: str) -> comp.CompanionValue:
    return read_companion(text, COMPANION, filename=FILE)


def refusal(text: str) -> str:
    with pytest.raises(CompanionError) as caught:
        read(text)
    return str(caught.value)


def test_the_real_script_reads_its_default_ref() -> None:
    script = install_deepgemm(SHA)

    found = read(script)

    assert (found.value, found.line) == (SHA, default_ref_line(script))
    assert script.splitlines()[found.line - 1] == f'DEEPGEMM_GIT_REF="{SHA}"'


def test_the_real_script_bump_changes_the_default_only() -> None:
    script = install_deepgemm(SHA)

    edited = set_companion(script, COMPANION, NEW, filename=FILE)

    assert edited == install_deepgemm(NEW)
    assert '            DEEPGEMM_GIT_REF="$2"\n' in edited
    assert set_companion(script, COMPANION, SHA, filename=FILE) == script


@pytest.mark.parametrize(
    "override",
    [
        '            DEEPGEMM_GIT_REF="$2"',
        "            DEEPGEMM_GIT_REF=$2",
        '            DEEPGEMM_GIT_REF="$2"; shift 2 ;;',
        '            DEEPGEMM_GIT_REF="${1#*=}" ;;',
        '            DEEPGEMM_GIT_REF="${1##--ref=}"',
        "            DEEPGEMM_GIT_REF=$OPTARG ;;",
        '            DEEPGEMM_GIT_REF="${OPTARG}"&& shift',
        '            DEEPGEMM_GIT_REF="$2"|| exit',
        '            DEEPGEMM_GIT_REF="$2")',
        "    local DEEPGEMM_GIT_REF=${1}",
        '            DEEPGEMM_GIT_REF="$2"  # from the command line',
        '            DEEPGEMM_GIT_REF="${2%/}"\r',
    ],
)
def test_an_assignment_from_the_arguments_is_not_the_value(override: str) -> None:
    text = f'{NAME}="{SHA}"\nwhile true; do\n  case $1 in\n{override}\n  esac\ndone\n'

    assert read(text).value == SHA
    assert set_companion(text, COMPANION, NEW, filename=FILE) == text.replace(SHA, NEW, 1)


def test_an_option_on_the_case_line_is_no_assignment_at_all() -> None:
    # Only a line starting with NAME= assigns (see the module's known limits).
    text = f'{NAME}="{SHA}"\ncase $1 in\n  --ref) {NAME}="$2"; shift 2 ;;\nesac\n'

    assert read(text).value == SHA


def test_the_override_may_come_before_the_default() -> None:
    text = f'parse() {{\n  {NAME}="$1"\n}}\n{NAME}=v1.2.3\n'

    assert (read(text).value, read(text).line) == ("v1.2.3", 4)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        # A default written in the expansion is a literal the bot would miss: refused.
        (f'{NAME}="${{1:-{SHA}}}"', comp.REASON_SHELL_EXPANSION),
        (f'{NAME}="$10"', comp.REASON_SHELL_EXPANSION),  # ${1}0, not the tenth argument
        (f'{NAME}="$2"suffix', comp.REASON_SHELL_EXPANSION),
        (f'{NAME}="$2', comp.REASON_SHELL_UNTERMINATED),
        (f'{NAME}="$REF"', comp.REASON_SHELL_EXPANSION),
    ],
)
def test_other_expansions_still_count_as_settings(line: str, reason: str) -> None:
    text = f"{NAME}=v1\n{line}\n"

    assert refusal(text) == comp.MSG_SET_TWICE.format(name=NAME, filename=FILE, lines="1, 2")
    assert refusal(f"{line}\n") == comp.MSG_NOT_LITERAL.format(
        filename=FILE, line=1, name=NAME, reason=reason
    )


def test_a_single_quoted_dollar_is_a_literal_not_an_argument() -> None:
    # '$2' does not expand in shell: it is a (strange) value, so two settings.
    text = f"{NAME}=v1\n{NAME}='$2'\n"

    assert refusal(text) == comp.MSG_SET_TWICE.format(name=NAME, filename=FILE, lines="1, 2")


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        (f'case $1 in\n  --ref)\n    {NAME}="$2"\n    ;;\nesac\n', "line 3"),
        (f'{NAME}="$1"\n{NAME}=$OPTARG\n', "lines 1, 2"),
    ],
)
def test_only_overrides_and_no_default_is_refused(text: str, lines: str) -> None:
    s, numbers = lines.split(" ", 1)
    expected = comp.MSG_ONLY_FROM_ARGUMENTS.format(
        name=NAME, filename=FILE, s="s" if s == "lines" else "", lines=numbers
    )
    assert refusal(text) == expected
    assert "there is no default value to edit" in expected


def test_two_defaults_beside_an_override_are_still_refused() -> None:
    text = f'{NAME}=v1\n--ref) {NAME}="$2"\n{NAME}=v2\n'

    assert refusal(text) == comp.MSG_SET_TWICE.format(name=NAME, filename=FILE, lines="1, 3")
