"""Tests for the local ``plan bump`` dry run."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.cli import plan_bump, plan_files
from bot.cli.plan_bump import EXIT_FAILED, EXIT_OK
from bot.edit import cmake_pin as pins

FILE = "cmake/external_projects/vllm_flash_attn.cmake"
DEPENDENCY = "vllm-flash-attn"
OLD_SHA = "5b8c1a7e0f3d2946a1b7c8e9d0f1a2b3c4d5e6f7"
NEW_SHA = "feedfacefeedfacefeedfacefeedfacefeedface"


@pytest.fixture
def repo(tmp_path: Path, cmake_fixture: Callable[[str], str]) -> Path:
    target = tmp_path / FILE
    target.parent.mkdir(parents=True)
    target.write_bytes(cmake_fixture("vllm_flash_attn.cmake").encode("utf-8"))
    return tmp_path


def run(
    repo: Path,
    *,
    to: str = NEW_SHA,
    write: bool = False,
    file: str = FILE,
    dependency: str = DEPENDENCY,
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = plan_bump.plan_bump(repo, file, dependency, to, write=write, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_dry_run_prints_the_diff_and_leaves_the_file(repo: Path) -> None:
    before = (repo / FILE).read_bytes()

    code, out, err = run(repo)

    assert (code, err) == (EXIT_OK, "")
    assert out.startswith(f"--- a/{FILE}\n+++ b/{FILE}\n@@ ")
    assert f"-          GIT_TAG {OLD_SHA}\n+          GIT_TAG {NEW_SHA}\n" in out
    assert (repo / FILE).read_bytes() == before


def test_write_applies_the_bump(repo: Path) -> None:
    before = (repo / FILE).read_bytes()

    code, out, err = run(repo, write=True)

    assert code == EXIT_OK
    assert f"+          GIT_TAG {NEW_SHA}\n" in out
    assert err == plan_bump.MSG_WROTE.format(file=FILE, dependency=DEPENDENCY, to=NEW_SHA) + "\n"
    assert (repo / FILE).read_bytes() == before.replace(OLD_SHA.encode(), NEW_SHA.encode())


def test_write_keeps_crlf_and_other_bytes_exactly(repo: Path) -> None:
    crlf = (repo / FILE).read_bytes().replace(b"\n", b"\r\n") + "# ünïcode\r\n".encode()
    (repo / FILE).write_bytes(crlf)

    code, _, _ = run(repo, write=True)

    assert code == EXIT_OK
    assert (repo / FILE).read_bytes() == crlf.replace(OLD_SHA.encode(), NEW_SHA.encode())


def test_already_at_the_value_prints_nothing_and_notes_it(repo: Path) -> None:
    before = (repo / FILE).read_bytes()

    code, out, err = run(repo, to=OLD_SHA, write=True)

    assert (code, out) == (EXIT_OK, "")
    assert err == plan_bump.MSG_ALREADY.format(file=FILE, dependency=DEPENDENCY, to=OLD_SHA) + "\n"
    assert (repo / FILE).read_bytes() == before


def test_missing_file(tmp_path: Path) -> None:
    code, out, err = run(tmp_path)

    assert (code, out) == (EXIT_FAILED, "")
    assert err == plan_files.MSG_MISSING.format(file=FILE, repo=tmp_path) + "\n"


def test_unreadable_file(repo: Path) -> None:
    (repo / "cmake" / "dir.cmake").mkdir()

    code, out, err = run(repo, file="cmake/dir.cmake")

    assert (code, out) == (EXIT_FAILED, "")
    assert err.startswith("error: cmake/dir.cmake: cannot read: ")
    assert err.count("\n") == 1


def test_file_that_is_not_utf8(repo: Path) -> None:
    (repo / FILE).write_bytes(b"set(X \xff)\n")

    code, out, err = run(repo)

    assert (code, out) == (EXIT_FAILED, "")
    assert err == plan_files.MSG_NOT_UTF8.format(file=FILE) + "\n"


@pytest.mark.parametrize("file", ["../outside.cmake", "/etc/hosts", "", "."])
def test_paths_outside_the_repository_are_refused(repo: Path, file: str) -> None:
    code, out, err = run(repo, file=file)

    assert (code, out) == (EXIT_FAILED, "")
    assert err == plan_files.MSG_OUTSIDE_REPO.format(file=file, repo=repo) + "\n"


def test_pin_errors_exit_2_with_the_message(repo: Path) -> None:
    before = (repo / FILE).read_bytes()

    code, out, err = run(repo, dependency="nope", write=True)

    assert (code, out) == (EXIT_FAILED, "")
    detail = pins.MSG_NOT_FOUND.format(dependency="nope", filename=FILE, declared=DEPENDENCY)
    assert err == f"error: {detail}\n"
    assert (repo / FILE).read_bytes() == before


def test_invalid_target_value_exits_2(repo: Path) -> None:
    code, out, err = run(repo, to="v1 2")

    assert (code, out) == (EXIT_FAILED, "")
    assert err == "error: " + pins.MSG_INVALID_NEW_VALUE.format(value="v1 2") + "\n"


def test_write_failure_exits_2(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Path, data: bytes) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "write_bytes", refuse)

    code, _, err = run(repo, write=True)

    assert code == EXIT_FAILED
    assert err == plan_files.MSG_UNWRITABLE.format(file=FILE, reason="Permission denied") + "\n"


def test_a_shallow_pin_given_a_sha_exits_2(
    tmp_path: Path, cmake_fixture: Callable[[str], str]
) -> None:
    (tmp_path / "CMakeLists.txt").write_text(cmake_fixture("CMakeLists.txt"))

    code, out, err = run(tmp_path, file="CMakeLists.txt", dependency="cutlass")

    assert code == EXIT_FAILED
    assert out == ""
    assert "GIT_SHALLOW TRUE, which cannot fetch a commit sha" in err
    assert run(tmp_path, to="v4.5.0", file="CMakeLists.txt", dependency="cutlass")[0] == EXIT_OK
