"""The ELF header check that turns unreadable libraries into errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.abi.elf import BAD_HEADER, NOT_ELF, NOT_SHARED, TRUNCATED, elf_problem

from .fakelibs import FakeLibraries


def test_sound_libraries_pass(fake_libs: FakeLibraries) -> None:
    for kind in ("unstable", "stable", "no-torch"):
        assert elf_problem(fake_libs.library(kind)) is None


@pytest.mark.parametrize("content", [b"", b"garbage", b"GNU ld script\nINPUT(libx.so.1)\n"])
def test_non_elf_files(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.so"
    path.write_bytes(content)
    assert elf_problem(path) == NOT_ELF


def test_bad_class_or_short_header(tmp_path: Path) -> None:
    path = tmp_path / "x.so"
    path.write_bytes(b"\x7fELF\x09\x01" + bytes(58))
    assert elf_problem(path) == BAD_HEADER
    path.write_bytes(b"\x7fELF\x02\x01" + bytes(20))
    assert elf_problem(path) == BAD_HEADER


def test_truncated_library(fake_libs: FakeLibraries, tmp_path: Path) -> None:
    data = fake_libs.library("unstable").read_bytes()
    path = tmp_path / "x.so"
    path.write_bytes(data[: len(data) // 2])
    assert elf_problem(path) == TRUNCATED.format(table="section header", size=len(data) // 2)
    path.write_bytes(data[:64])
    assert elf_problem(path) == TRUNCATED.format(table="program header", size=64)


def test_an_object_file_is_not_a_shared_library(fake_libs: FakeLibraries, tmp_path: Path) -> None:
    compiler = shutil.which("g++")
    assert compiler is not None  # fake_libs failed otherwise
    obj = tmp_path / "x.so"
    source = fake_libs.directory / "no-torch.cpp"
    subprocess.run([compiler, "-c", "-fPIC", "-o", str(obj), source], check=True, timeout=120)
    assert elf_problem(obj) == NOT_SHARED.format(type=1)
