"""Fixtures for the pin editor tests: the hand-written CMake files in ``data/``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

DATA_DIR = Path(__file__).parent / "data"


def read_fixture(name: str) -> str:
    # newline="" keeps the bytes as written, like the bot reading a blob.
    with (DATA_DIR / name).open(encoding="utf-8", newline="") as handle:
        return handle.read()


@pytest.fixture
def cmake_fixture() -> Callable[[str], str]:
    """Return the text of a fixture file by name."""
    return read_fixture
