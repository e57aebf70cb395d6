"""``bot.pins.sync_comments``: "keep in sync with FILE" comments and the ``also:`` they propose."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.models import CompanionConfig
from bot.pins.sync_comments import (
    PROBLEM_NO_PIN_VALUE,
    PROBLEM_NOT_READ_BACK,
    PROBLEM_UNREADABLE,
    Companion,
    infer_companion,
    propose_companion,
    sync_companions,
    sync_targets,
)

SHA = "5a8c0f2e9b7d1c3a4e6f8091b2d3c4e5f6a7b8c9"

BLOCKS = """\
set(OTHER_TAG "v1.0.0")  # keep in sync with far/away.txt

# The commit below is the one the wheel is built from: keep it
# in sync with `tools/fetch.sh`.
FetchContent_Declare(
  thing
  GIT_REPOSITORY https://github.com/o/thing.git
  GIT_TAG abc  # Kept In Sync With docker/versions.env.
)
# keep this in sync with THING_TAG (a variable, not a file)
"""


def test_sync_targets_are_the_files_named_in_and_above_the_block() -> None:
    lines = BLOCKS.splitlines()
    assert sync_targets(lines, [5]) == ["tools/fetch.sh", "docker/versions.env"]
    assert sync_targets(lines, [1]) == ["far/away.txt"]
    assert sync_targets(lines, [99]) == []


@pytest.mark.parametrize(
    ("file", "text", "config"),
    [
        (
            "tools/install_deepgemm.sh",
            f'#!/bin/sh\nDEEPGEMM_GIT_REF="{SHA}"\n',
            CompanionConfig(file="tools/install_deepgemm.sh", variable="DEEPGEMM_GIT_REF"),
        ),
        (
            "tools/install_deepgemm",  # no suffix: the format is written out
            f"export DEEPGEMM_GIT_REF={SHA}\n",
            CompanionConfig(
                file="tools/install_deepgemm", variable="DEEPGEMM_GIT_REF", format="shell"
            ),
        ),
        (
            "cmake/versions.cmake",
            f'set(DEEPGEMM_REF "{SHA}")\n',
            CompanionConfig(file="cmake/versions.cmake", variable="DEEPGEMM_REF"),
        ),
        (
            "setup.py",
            f'import os\n\nDEEPGEMM_REF = "{SHA}"\n',
            CompanionConfig(file="setup.py", variable="DEEPGEMM_REF"),
        ),
        (
            "docker/Dockerfile",  # no variable form fits: a pattern
            f"FROM base\nRUN git checkout {SHA} && make\n",
            CompanionConfig(file="docker/Dockerfile", pattern="RUN git checkout ([0-9a-fA-F]{40})"),
        ),
    ],
)
def test_the_companion_is_inferred_and_read_back(
    file: str, text: str, config: CompanionConfig
) -> None:
    found = infer_companion(text, file, SHA)
    assert isinstance(found, Companion)
    assert found.config == config
    assert (found.line, found.value) == (text[: text.index(SHA)].count("\n") + 1, SHA)


def test_a_bare_value_cannot_be_read_back() -> None:
    found = infer_companion(f"# pinned:\n{SHA}\n", "docker/REF", SHA)
    assert found == PROBLEM_NOT_READ_BACK.format(file="docker/REF", value=SHA, line=2)


def test_a_companion_is_found_relative_to_the_pin_file_too(tmp_path: Path) -> None:
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake/ref.cmake").write_text(f"set(REF {SHA})\n")
    found = propose_companion(tmp_path, "cmake/pins.cmake", "ref.cmake", SHA)
    assert isinstance(found, Companion)
    assert found.config == CompanionConfig(file="cmake/ref.cmake", variable="REF")
    outside = propose_companion(tmp_path, "cmake/pins.cmake", "../../etc/passwd", SHA)
    assert not isinstance(outside, Companion)


def test_a_pin_without_value_proposes_nothing(tmp_path: Path) -> None:
    assert propose_companion(tmp_path, "x.cmake", "y.sh", None) == PROBLEM_NO_PIN_VALUE.format(
        target="y.sh"
    )


def test_windows_without_a_block_or_never_closed_still_read_their_comments() -> None:
    plain = ["message(STATUS hi)", "# keep in sync with a/b.txt", "VALUE"]
    assert sync_targets(plain, [3]) == ["a/b.txt"]
    unclosed = ["FetchContent_Declare(x  # keep in sync with c.sh", "  GIT_TAG v1.0.0"]
    assert sync_targets(unclosed, [1]) == ["c.sh"]


def test_an_unreadable_or_ambiguous_companion_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "bin.sh").write_bytes(b"\xff" + SHA.encode())
    assert propose_companion(tmp_path, "x.cmake", "bin.sh", SHA) == PROBLEM_UNREADABLE.format(
        file="bin.sh"
    )
    twice = f"RUN git checkout {SHA}\nRUN git checkout {SHA}\n"
    assert infer_companion(twice, "Dockerfile", SHA) == PROBLEM_NOT_READ_BACK.format(
        file="Dockerfile", value=SHA, line=1
    )
    # A path the config's grammar refuses cannot be proposed at all.
    assert infer_companion(f'REF="{SHA}"\n', "my tools/x.sh", SHA) == (
        PROBLEM_NOT_READ_BACK.format(file="my tools/x.sh", value=SHA, line=1)
    )


def test_a_comment_naming_the_pin_file_itself_proposes_nothing(tmp_path: Path) -> None:
    text = f"FetchContent_Declare(x  # keep in sync with x.cmake\n  GIT_TAG {SHA}\n)\n"
    (tmp_path / "x.cmake").write_text(text)
    assert sync_companions(tmp_path, "x.cmake", text, anchors=[1], value=SHA) == ((), ())
