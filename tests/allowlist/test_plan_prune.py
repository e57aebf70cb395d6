"""Tests for the local ``plan prune`` dry run (and the checkout file helpers it uses)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.cli import plan_files, plan_prune
from bot.cli.plan_prune import EXIT_FAILED, EXIT_OK
from bot.edit import allowlist as al

from .helpers import DEEP_GEMM, FA2, FA3, read_fixture, script_with

FILE = ".buildkite/check-torch-abi.py"
VARIABLE = "ALLOWED_UNSTABLE_LIBRARIES"
PREFIX = f"{VARIABLE}: tuple[str, ...] = "
DG_310 = "third_party/deep_gemm/_C.cpython-310-x86_64-linux-gnu.so"
DG_311 = "third_party/deep_gemm/_C.cpython-311-x86_64-linux-gnu.so"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    target = tmp_path / FILE
    target.parent.mkdir(parents=True)
    target.write_bytes(read_fixture().encode("utf-8"))
    return tmp_path


def run(
    repo: Path,
    *,
    remove: Sequence[str] = (),
    replace: Sequence[str] = (),
    write: bool = False,
    file: str = FILE,
    variable: str = VARIABLE,
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = plan_prune.plan_prune(
        repo,
        file,
        variable=variable,
        remove=remove,
        replace=replace,
        write=write,
        out=out,
        err=err,
    )
    return code, out.getvalue(), err.getvalue()


def test_dry_run_prints_the_diff_and_leaves_the_file(repo: Path) -> None:
    before = (repo / FILE).read_bytes()

    code, out, err = run(repo, remove=[FA2])

    assert (code, err) == (EXIT_OK, "")
    assert out.startswith(f"--- a/{FILE}\n+++ b/{FILE}\n@@ ")
    assert f'\n-    "{FA2}",\n' in out
    assert [line for line in out.splitlines() if line[:1] in "+-"][2:] == [f'-    "{FA2}",']
    assert (repo / FILE).read_bytes() == before


def test_write_applies_removals_and_replacements(repo: Path) -> None:
    code, out, err = run(
        repo, remove=[FA2, FA3], replace=[f"{DEEP_GEMM}={DG_310},{DG_311}"], write=True
    )

    assert code == EXIT_OK
    assert f'+    "{DG_311}",\n' in out
    expected = script_with(f'{PREFIX}(\n    "{DG_310}",\n    "{DG_311}",\n)')
    assert (repo / FILE).read_bytes() == expected.encode("utf-8")
    wrote = plan_prune.MSG_WROTE.format(file=FILE, variable=VARIABLE, removed=2, replaced=1)
    assert err == wrote + "\n"


def test_write_keeps_crlf_and_other_bytes_exactly(repo: Path) -> None:
    crlf = read_fixture().replace("\n", "\r\n") + "# ünïcode\r\n"
    (repo / FILE).write_bytes(crlf.encode("utf-8"))

    code, _, _ = run(repo, remove=[FA2, FA3], write=True)

    assert code == EXIT_OK
    collapsed = f'{PREFIX}("{DEEP_GEMM}",)'
    expected = script_with(collapsed).replace("\n", "\r\n") + "# ünïcode\r\n"
    assert (repo / FILE).read_bytes() == expected.encode("utf-8")


def test_another_variable(repo: Path) -> None:
    text = read_fixture() + '\n\nROCM_ONLY = ("_C.abi3.so", "_rocm_C.abi3.so")\n'
    (repo / FILE).write_text(text, encoding="utf-8")

    code, out, _ = run(repo, variable="ROCM_ONLY", remove=["_C.abi3.so"], write=True)

    assert code == EXIT_OK
    assert '+ROCM_ONLY = ("_rocm_C.abi3.so",)\n' in out
    assert (
        (repo / FILE).read_text(encoding="utf-8").endswith('\nROCM_ONLY = ("_rocm_C.abi3.so",)\n')
    )


def test_an_edit_that_changes_nothing_is_noted(repo: Path) -> None:
    before = (repo / FILE).read_bytes()

    code, out, err = run(repo, replace=[f"{FA2}={FA2}"], write=True)

    assert (code, out) == (EXIT_OK, "")
    assert err == plan_prune.MSG_UNCHANGED.format(file=FILE, variable=VARIABLE) + "\n"
    assert (repo / FILE).read_bytes() == before


def assert_failed(result: tuple[int, str, str], message: str) -> None:
    code, out, err = result
    assert (code, out, err) == (EXIT_FAILED, "", message + "\n")


def test_unknown_pattern_exits_2_naming_it(repo: Path) -> None:
    result = run(repo, remove=["vllm_flash_attn/*"], write=True)

    reason = al.MSG_UNKNOWN_PATTERN.format(
        where=f"{FILE}:18", variable=VARIABLE, patterns="'vllm_flash_attn/*'"
    )
    assert_failed(result, plan_prune.MSG_ALLOWLIST.format(reason=reason))


def test_unknown_variable_exits_2(repo: Path) -> None:
    result = run(repo, variable="ALLOWED", remove=[FA2])

    reason = al.MSG_NOT_FOUND.format(filename=FILE, variable="ALLOWED")
    assert_failed(result, plan_prune.MSG_ALLOWLIST.format(reason=reason))


def test_a_file_the_editor_refuses_exits_2(repo: Path) -> None:
    (repo / FILE).write_text(f"{VARIABLE} = tuple(['{FA2}'])\n", encoding="utf-8")

    code, out, err = run(repo, remove=[FA2])

    assert (code, out) == (EXIT_FAILED, "")
    assert err.startswith(f"error: {FILE}:1: {VARIABLE} is not a tuple literal")


@pytest.mark.parametrize(
    "argument",
    ["no-equals-sign", "=new.so", f"{FA2}=", f"{FA2}=a.so,", f"{FA2}=a.so,,b.so"],
)
def test_malformed_replace_exits_2(repo: Path, argument: str) -> None:
    result = run(repo, replace=[argument])

    assert_failed(result, plan_prune.MSG_BAD_REPLACE.format(argument=argument))


def test_the_same_pattern_replaced_twice_exits_2(repo: Path) -> None:
    result = run(repo, replace=[f"{FA2}=a.so", f"{FA2}=b.so"])

    assert_failed(result, plan_prune.MSG_REPLACE_TWICE.format(pattern=FA2))


def test_nothing_to_do_exits_2(repo: Path) -> None:
    assert_failed(run(repo), plan_prune.MSG_NO_EDIT)


def test_missing_file_exits_2(repo: Path) -> None:
    result = run(repo, file="nope.py", remove=[FA2])

    assert_failed(result, plan_files.MSG_MISSING.format(file="nope.py", repo=repo))


@pytest.mark.parametrize("file", ["/etc/passwd", "../outside.py", "."])
def test_a_path_outside_the_repository_exits_2(repo: Path, file: str) -> None:
    result = run(repo, file=file, remove=[FA2])

    assert_failed(result, plan_files.MSG_OUTSIDE_REPO.format(file=file, repo=repo))


def test_unreadable_file_exits_2(repo: Path) -> None:
    (repo / "dir.py").mkdir()

    code, out, err = run(repo, file="dir.py", remove=[FA2])

    assert (code, out) == (EXIT_FAILED, "")
    assert err.startswith("error: dir.py: cannot read: ")


def test_non_utf8_file_exits_2(repo: Path) -> None:
    (repo / FILE).write_bytes(b"X = ('\xff',)\n")

    assert_failed(run(repo, remove=[FA2]), plan_files.MSG_NOT_UTF8.format(file=FILE))


def test_unwritable_file_exits_2_after_the_diff(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, data: bytes) -> int:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "write_bytes", refuse)

    code, out, err = run(repo, remove=[FA2], write=True)

    assert code == EXIT_FAILED
    assert f'-    "{FA2}",' in out
    assert err == plan_files.MSG_UNWRITABLE.format(file=FILE, reason="Permission denied") + "\n"
