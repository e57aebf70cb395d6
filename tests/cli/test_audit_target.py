"""``followup-bot audit DIR``: the directory it wants is the ``vllm/`` package itself."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.cli.audit import MSG_ERROR, MSG_HINT, MSG_WRONG_DIRECTORY, audit_command
from bot.cli.main import AUDIT_TARGET_HELP, main

FA3 = "vllm_flash_attn/_vllm_fa3_C.abi3.so"
LIBRARIES = ("_C.abi3.so", "vllm_flash_attn/_vllm_fa2_C.abi3.so", FA3)
ALLOWLIST = f'ALLOWED_UNSTABLE_LIBRARIES: tuple[str, ...] = ("{FA3}", "_rocm_C.abi3.so")\n'


def checkout(root: Path) -> Path:
    """A checkout whose ``vllm/`` package holds the libraries (never opened: the target
    is refused before any is inspected)."""
    for library in LIBRARIES:
        path = root / "vllm" / library
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    allowlist = root / ".buildkite" / "check-torch-abi.py"
    allowlist.parent.mkdir(parents=True)
    allowlist.write_text(ALLOWLIST)
    return allowlist


def run(target: Path, allowlist: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = audit_command(target, allowlist, as_json=True, out=out, err=err)
    return code, err.getvalue()


def test_a_directory_above_the_package_is_refused_naming_the_package(tmp_path: Path) -> None:
    allowlist = checkout(tmp_path)
    code, err = run(tmp_path, allowlist)
    wrong = MSG_WRONG_DIRECTORY.format(
        target=tmp_path, count=3, ies="ies", hint=MSG_HINT.format(package=tmp_path / "vllm")
    )
    assert (code, err) == (2, MSG_ERROR.format(reason=wrong) + "\n")


def test_a_directory_with_no_match_and_no_package_below_gets_no_hint(tmp_path: Path) -> None:
    allowlist = checkout(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "lib.so").write_bytes(b"")
    code, err = run(other, allowlist)
    wrong = MSG_WRONG_DIRECTORY.format(target=other, count=1, ies="y", hint="")
    assert (code, err) == (2, MSG_ERROR.format(reason=wrong) + "\n")


def test_the_help_says_which_directory_it_wants(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "TARGET a .whl file, or the unpacked vllm/ package directory itself" in help_text
    assert "vllm/ package directory itself" in AUDIT_TARGET_HELP
