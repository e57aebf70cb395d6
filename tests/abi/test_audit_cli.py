"""``followup-bot audit``: vLLM's exact lines and exit codes, the table, JSON, errors."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from bot.abi.model import MSG_NO_NM, MSG_NOT_WHEEL_OR_DIR
from bot.cli.audit import HEADER, PASSED, audit_command

from .fakelibs import FakeLibraries, Kind
from .samples import allowlist_script

FA2 = "vllm_flash_attn/_vllm_fa2_C.abi3.so"
FA3 = "vllm_flash_attn/_vllm_fa3_C.abi3.so"
DEEP_GEMM = [
    f"third_party/deep_gemm/_C.cpython-{version}-x86_64-linux-gnu.so"
    for version in (310, 311, 312, 313, 314)
]
DEEP_GEMM_GLOB = "third_party/deep_gemm/_C.cpython-*-x86_64-linux-gnu.so"
OUTSIDE = "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: "
STALE = "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: "


@pytest.fixture
def vllm(tmp_path: Path, fake_libs: FakeLibraries) -> Path:
    layout: dict[str, Kind] = {"_C.abi3.so": "stable", FA2: "stable", FA3: "unstable"}
    layout.update(dict.fromkeys(DEEP_GEMM, "unstable"))
    return fake_libs.package(tmp_path / "vllm", layout)


def run(
    target: Path,
    allowlist: Path,
    *,
    variable: str = "ALLOWED_UNSTABLE_LIBRARIES",
    as_json: bool = False,
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = audit_command(target, allowlist, variable=variable, as_json=as_json, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def write_allowlist(
    tmp_path: Path, entries: list[str], variable: str = "ALLOWED_UNSTABLE_LIBRARIES"
) -> Path:
    path = tmp_path / "check-torch-abi.py"
    path.write_text(allowlist_script(entries, variable))
    return path


def test_pass(vllm: Path, tmp_path: Path) -> None:
    allowlist = write_allowlist(tmp_path, [FA3, "third_party/deep_gemm/_C*.so", "_rocm_C.abi3.so"])
    code, out, err = run(vllm, allowlist)
    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert lines[:3] == [HEADER, PASSED, ""]
    assert lines[3] == "Libraries: 6 unstable, 2 stable, 0 no-torch"
    assert "not-on-this-platform" in out
    assert "Torch-unstable libraries outside" not in out


def test_both_lines_on_stderr_outside_first(vllm: Path, tmp_path: Path) -> None:
    allowlist = write_allowlist(tmp_path, [FA2, "_rocm_C.abi3.so"])
    code, out, err = run(vllm, allowlist)
    assert code == 1
    assert err == f"{OUTSIDE}{', '.join([*DEEP_GEMM, FA3])}\n{STALE}{FA2}\n"
    assert out.startswith(HEADER + "\n\n")
    assert PASSED not in out
    assert f'propose: "{DEEP_GEMM_GLOB}",' in out
    assert f'propose: "{FA3}",' in out
    assert "7 unstable symbol(s), first:\n        at::fake_op_a()\n" in out


def test_mixed_pattern_is_stale_for_the_check_and_narrowed_in_the_table(
    vllm: Path, tmp_path: Path
) -> None:
    allowlist = write_allowlist(tmp_path, ["vllm_flash_attn/*", "third_party/deep_gemm/_C*.so"])
    code, out, err = run(vllm, allowlist)
    assert (code, err) == (1, f"{STALE}vllm_flash_attn/*\n")
    assert f"      replace with: {FA3}\n" in out
    rows = [line.split() for line in out.splitlines()]
    assert ["vllm_flash_attn/*", "1", "1", "narrow"] in rows


def test_the_variable_name_is_used_in_the_lines(vllm: Path, tmp_path: Path) -> None:
    allowlist = write_allowlist(tmp_path, [FA2], variable="ALLOWED")
    code, _, err = run(vllm, allowlist, variable="ALLOWED")
    assert code == 1
    assert err.splitlines()[0].startswith("Not allowed: torch-unstable libraries outside ALLOWED: ")
    assert err.splitlines()[1] == f"Not allowed: stale ALLOWED entries: {FA2}"


def test_json_document(vllm: Path, tmp_path: Path) -> None:
    allowlist = write_allowlist(tmp_path, [FA2, "third_party/deep_gemm/_C*.so"])
    code, out, err = run(vllm, allowlist, as_json=True)
    assert (code, err) == (1, "")
    document = json.loads(out)
    assert document["exit_code"] == 1
    assert document["check_lines"] == [f"{OUTSIDE}{FA3}", f"{STALE}{FA2}"]
    assert [pattern["decision"] for pattern in document["patterns"]] == ["delete", "keep"]
    assert document["proposed"] == {FA3: FA3}
    assert {library["path"]: library["kind"] for library in document["libraries"]}[FA2] == "stable"
    assert set(document) == {
        "variable",
        "exit_code",
        "passed",
        "check_lines",
        "libraries",
        "patterns",
        "unexpected",
        "proposed",
    }


def test_json_pass_exit_code(vllm: Path, tmp_path: Path) -> None:
    allowlist = write_allowlist(tmp_path, [FA3, "third_party/deep_gemm/_C*.so"])
    code, out, _ = run(vllm, allowlist, as_json=True)
    assert code == 0
    assert json.loads(out)["passed"] is True


def test_a_wheel_target(vllm: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "vllm-1.0-cp38-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for library in vllm.rglob("*.so"):
            archive.write(library, f"vllm/{library.relative_to(vllm).as_posix()}")
        archive.writestr("vllm/__init__.py", "")
    allowlist = write_allowlist(tmp_path, [FA3, "third_party/deep_gemm/_C*.so"])
    code, out, err = run(wheel, allowlist)
    assert (code, err) == (0, "")
    assert out.startswith(f"{HEADER}\n{PASSED}\n")


def test_missing_nm_exits_2_and_never_passes(
    vllm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    allowlist = write_allowlist(tmp_path, [FA3])
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    for as_json in (False, True):
        code, out, err = run(vllm, allowlist, as_json=as_json)
        assert code == 2
        assert err == f"error: {MSG_NO_NM}\n"
        assert PASSED not in out
        assert out == ("" if as_json else HEADER + "\n")


def test_cpu_variant_build_exits_2(tmp_path: Path, fake_libs: FakeLibraries) -> None:
    root = fake_libs.package(
        tmp_path / "vllm",
        {"_C.abi3.so": "stable", "_C_AVX2.abi3.so": "unstable", "_C_AVX512.abi3.so": "unstable"},
    )
    code, _, err = run(root, write_allowlist(tmp_path, []))
    assert code == 2
    assert err.startswith("error: CPU-variant build detected (_C_AVX2.abi3.so, _C_AVX512.abi3.so)")


def test_corrupt_library_exits_2(vllm: Path, tmp_path: Path) -> None:
    (vllm / "_broken.abi3.so").write_bytes(b"\x00" * 100)
    code, out, err = run(vllm, write_allowlist(tmp_path, ["_broken.abi3.so"]))
    assert code == 2
    assert err == "error: failed to inspect _broken.abi3.so: not an ELF file\n"
    assert "Not allowed" not in out + err


def test_a_target_that_is_neither_wheel_nor_directory(tmp_path: Path) -> None:
    target = tmp_path / "vllm.tar.gz"
    target.write_bytes(b"")
    code, _, err = run(target, write_allowlist(tmp_path, []))
    assert (code, err) == (2, f"error: {MSG_NOT_WHEEL_OR_DIR.format(target=target)}\n")


def test_allowlist_problems_exit_2(vllm: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.py"
    code, _, err = run(vllm, missing)
    assert code == 2
    assert err.startswith(f"error: {missing}: cannot read the allowlist: ")

    other_variable = write_allowlist(tmp_path, [FA3], variable="SOMETHING_ELSE")
    code, _, err = run(vllm, other_variable)
    assert code == 2
    assert err.startswith("error: ")
    assert "ALLOWED_UNSTABLE_LIBRARIES" in err

    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\xff\xfe\x00")
    code, _, err = run(vllm, binary)
    assert code == 2
    assert err.startswith(f"error: {binary}: cannot read the allowlist: ")
