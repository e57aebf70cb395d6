"""Python companions: a module-level ``NAME = "value"``, found with ast."""

from __future__ import annotations

import ast

import pytest

from bot.config.models import CompanionConfig
from bot.edit import companion as comp
from bot.edit.companion import CompanionError, CompanionValue, read_companion, set_companion

FILE = "tools/versions.py"
COMPANION = CompanionConfig(file=FILE, variable="DEEPGEMM_REF")


def read(text: str) -> CompanionValue:
    return read_companion(text, COMPANION, filename=FILE)


def refusal(text: str) -> str:
    with pytest.raises(CompanionError) as caught:
        read(text)
    return str(caught.value)


def not_literal(line: int, reason: str) -> str:
    return comp.MSG_NOT_LITERAL.format(filename=FILE, line=line, name="DEEPGEMM_REF", reason=reason)


@pytest.mark.parametrize(
    "line",
    [
        'DEEPGEMM_REF = "v1.2.3"',
        "DEEPGEMM_REF = 'v1.2.3'",
        'DEEPGEMM_REF: str = "v1.2.3"',
        "DEEPGEMM_REF: Final[str] = 'v1.2.3'  # pinned",
        'DEEPGEMM_REF = ("v1.2.3")',
        'DEEPGEMM_REF="v1.2.3";   OTHER = 1',
        'LABEL = "é😀"; DEEPGEMM_REF = "v1.2.3"',
    ],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_reads_and_sets_every_plain_form(line: str, newline: str) -> None:
    text = newline.join(['"""Versions."""', "", "import os", line, "OTHER_REF = 'v1.2.3'", ""])

    found = read(text)

    assert (found.value, found.line) == ("v1.2.3", 4 if newline != "\r" else 1)
    assert text[found.start : found.end] == "v1.2.3"
    edited = set_companion(text, COMPANION, "v1.3.0", filename=FILE)
    assert edited == text.replace(line, line.replace("v1.2.3", "v1.3.0"))


def test_a_byte_order_mark_is_skipped() -> None:
    text = '\ufeffDEEPGEMM_REF = "v1"\n'

    found = read(text)

    assert (found.value, found.start) == ("v1", 17)
    assert set_companion(text, COMPANION, "v2", filename=FILE) == '\ufeffDEEPGEMM_REF = "v2"\n'


def test_an_assignment_in_a_module_level_block_counts() -> None:
    text = 'import sys\nif sys.platform == "linux":\n    DEEPGEMM_REF = "v1"\n'

    assert read(text).value == "v1"


def test_assignments_in_functions_and_classes_do_not_count() -> None:
    text = (
        "def build():\n    DEEPGEMM_REF = 'inner'\n    return DEEPGEMM_REF\n\n"
        "class Config:\n    DEEPGEMM_REF = 'attribute'\n\n"
        "async def fetch():\n    DEEPGEMM_REF = 'inner'\n\n"
        "DEEPGEMM_REF = 'v1'\n"
    )

    assert read(text).value == "v1"


def test_a_missing_name_lists_the_module_level_names() -> None:
    text = (
        "import os\nA = 1\nB: int = 2\nC: int\nD, (E, *F) = 1, (2, 3)\nobj.attr = 1\n"
        "table['DEEPGEMM_REF'] = 'x'\nG = H = 'y'\nA += 1\n"
        "def f():\n    DEEPGEMM_REF = 'inner'\n# DEEPGEMM_REF = 'commented'\n"
    )

    assert refusal(text) == (
        "DEEPGEMM_REF is not set in tools/versions.py (it sets: A, B, D, E, F, G, H)"
    )


def test_a_missing_name_in_a_module_setting_nothing() -> None:
    assert refusal("import os\n") == comp.MSG_NOT_FOUND.format(
        name="DEEPGEMM_REF", filename=FILE, names=comp.NOTHING
    )


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ('DEEPGEMM_REF = "a"\nDEEPGEMM_REF = "b"\n', "1, 2"),
        ('try:\n    DEEPGEMM_REF = "a"\nexcept ImportError:\n    DEEPGEMM_REF = "b"\n', "2, 4"),
        ('DEEPGEMM_REF = "a"\nDEEPGEMM_REF += "-rc1"\n', "1, 2"),
        ('DEEPGEMM_REF = "a"\nOTHER, DEEPGEMM_REF = 1, "b"\n', "1, 2"),
    ],
)
def test_a_name_set_twice_is_refused_with_its_lines(text: str, lines: str) -> None:
    assert refusal(text) == comp.MSG_SET_TWICE.format(
        name="DEEPGEMM_REF", filename=FILE, lines=lines
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('X = DEEPGEMM_REF = "v1"\n', comp.REASON_PY_TARGET),
        ('DEEPGEMM_REF, X = "v1", "v2"\n', comp.REASON_PY_TARGET),
        ('DEEPGEMM_REF += "v1"\n', comp.REASON_PY_TARGET),
        ('DEEPGEMM_REF = f"v{1}"\n', comp.REASON_PY_FSTRING),
        ('DEEPGEMM_REF = "v" + "1"\n', comp.REASON_PY_NOT_STRING),
        ('DEEPGEMM_REF = b"v1"\n', comp.REASON_PY_NOT_STRING),
        ("DEEPGEMM_REF = 3\n", comp.REASON_PY_NOT_STRING),
        ("DEEPGEMM_REF = os.environ['REF']\n", comp.REASON_PY_NOT_STRING),
        ('DEEPGEMM_REF = "v" "1"\n', comp.REASON_PY_FORM),
        ('DEEPGEMM_REF = r"v1"\n', comp.REASON_PY_FORM),
        ('DEEPGEMM_REF = u"v1"\n', comp.REASON_PY_FORM),
        ('DEEPGEMM_REF = """v1"""\n', comp.REASON_PY_FORM),
        ('DEEPGEMM_REF = "v\\x31"\n', comp.REASON_PY_FORM),
        ('DEEPGEMM_REF = (\n    "v"\n    "1"\n)\n', comp.REASON_PY_FORM),
    ],
)
def test_values_that_are_not_plain_string_literals_are_refused(text: str, reason: str) -> None:
    assert refusal(text) == not_literal(1, reason)


def test_a_file_that_is_not_python_is_refused() -> None:
    text = 'DEEPGEMM_REF = "v1"\ndef (:\n'
    with pytest.raises(SyntaxError) as python:
        ast.parse(text)
    problem = f"{python.value.msg} (line 2)"

    expected = comp.MSG_PARSE.format(filename=FILE, format="Python", problem=problem)
    assert refusal(text) == expected
