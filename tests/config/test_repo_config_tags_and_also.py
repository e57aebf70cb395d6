"""`track`, `tags`, `prereleases` and `also` of a pin: what parses and what is refused."""

from __future__ import annotations

import pytest

from bot.config import messages as msg
from bot.config.models import CompanionConfig, companion_format
from bot.config.parse import parse_repo_config

from .samples import FILENAME, PIN_LINES, problems_of

PIN = "pins:\n" + "\n".join(PIN_LINES) + "\n"


def also(*lines: str) -> str:
    return PIN + "    also:\n" + "".join(f"      {line}\n" for line in lines)


def test_a_tag_pin_and_its_defaults() -> None:
    config = parse_repo_config(PIN + "    track: tags\n", filename=FILENAME)
    [pin] = config.pins
    assert (pin.track, pin.tags, pin.prereleases, pin.also) == ("tags", "v*", False, ())
    assert config.pins_following("vllm-project/flash-attention", "main") == ()


def test_companions_by_variable_and_by_pattern() -> None:
    text = also(
        "- file: tools/install_deepgemm.sh",
        "  variable: DEEPGEMM_GIT_REF",
        "- file: docker/versions.yaml",
        "  variable: deps.deepgemm.ref",
        "- file: tools/any.txt",
        "  pattern: 'ref=(\\S+)'",
        "- file: tools/env",
        "  variable: REF",
        "  format: shell",
    )
    [pin] = parse_repo_config(text, filename=FILENAME).pins
    assert [c.resolved_format for c in pin.also] == ["shell", "yaml", None, "shell"]


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("CMakeLists.txt", "cmake"),
        ("cmake/x.cmake", "cmake"),
        ("setup.py", "python"),
        ("a.yml", "yaml"),
        ("tools/x.bash", "shell"),
        ("Dockerfile", None),
    ],
)
def test_the_format_comes_from_the_file_name(file: str, expected: str | None) -> None:
    assert companion_format(file) == expected


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (("- file: tools/x",), "pins[0].also[0]: " + msg.MSG_COMPANION_ONE_OF),
        (
            ("- file: tools/x.sh", "  variable: A", "  pattern: 'a(.)'"),
            "pins[0].also[0]: " + msg.MSG_COMPANION_ONE_OF,
        ),
        (
            ("- file: tools/x", "  variable: A"),
            "pins[0].also[0]: " + msg.MSG_COMPANION_FORMAT_UNKNOWN.format(file="tools/x"),
        ),
        (
            ("- file: tools/x.sh", "  pattern: 'a=(.*)'", "  format: shell"),
            "pins[0].also[0]: " + msg.MSG_COMPANION_FORMAT_WITH_PATTERN,
        ),
        (
            ("- file: tools/x.sh", "  variable: a.b"),
            "pins[0].also[0]: " + msg.MSG_COMPANION_KEY_PATH.format(format="shell"),
        ),
        (
            ("- file: tools/x.sh", "  pattern: 'a=.*'"),
            "pins[0].also[0].pattern: " + msg.MSG_PATTERN_GROUPS.format(count=0),
        ),
        (
            ("- file: tools/x.sh", "  variable: 'A B'"),
            "pins[0].also[0].variable: " + msg.MSG_BAD_COMPANION_VARIABLE.format(value="A B"),
        ),
        (
            ("- file: cmake/fa.cmake", "  variable: X"),
            "pins[0].also[0].file: " + msg.MSG_COMPANION_IS_PIN_FILE.format(file="cmake/fa.cmake"),
        ),
    ],
)
def test_a_companion_that_cannot_be_read_for_certain_is_refused(
    lines: tuple[str, ...], problem: str
) -> None:
    [found] = problems_of(also(*lines))
    assert found.split(": ", 1)[1] == problem


def test_a_wrong_track_names_the_choices() -> None:
    [found] = problems_of(PIN + "    track: tag\n")
    assert "must be one of 'branch', 'tags'" in found


def test_a_companion_is_frozen_and_hashable() -> None:
    companion = CompanionConfig(file="a.sh", variable="A")
    assert hash(companion) == hash(CompanionConfig(file="a.sh", variable="A"))
