"""The audit of real (fake) compiled libraries laid out like a vLLM package."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_abi_audit import inspect_extension

from bot.abi import judge as abi
from bot.abi.elf import NOT_ELF
from bot.abi.judge import AuditError, LibraryVerdict, audit_directory
from bot.abi.model import MSG_NO_LIBRARIES, MSG_NO_NM, MSG_NOT_WHEEL_OR_DIR

from .fakelibs import UNSTABLE_SYMBOLS, FakeLibraries, Kind

FA2 = "vllm_flash_attn/_vllm_fa2_C.abi3.so"
FA3 = "vllm_flash_attn/_vllm_fa3_C.abi3.so"
DEEP_GEMM = [
    f"third_party/deep_gemm/_C.cpython-{version}-x86_64-linux-gnu.so"
    for version in (310, 311, 312, 313, 314)
]
VLLM_ALLOWLIST = [FA3, "third_party/deep_gemm/_C*.so", "_C.abi3.so", "_rocm_C.abi3.so"]


@pytest.fixture
def vllm(tmp_path: Path, fake_libs: FakeLibraries) -> Path:
    """A CUDA build after FA3's stable-ABI migration: only deep_gemm is unstable."""
    layout: dict[str, Kind] = {
        "_C.abi3.so": "stable",
        "_moe_C.abi3.so": "stable",
        "fs_io_C.abi3.so": "no-torch",
        FA2: "stable",
        FA3: "stable",
        "vllm_flash_attn/__init__.py": "no-torch",  # not a library: never inspected
        **dict.fromkeys(DEEP_GEMM, "unstable"),
    }
    return fake_libs.package(tmp_path / "vllm", layout)


def test_every_verdict_and_the_stale_line(vllm: Path) -> None:
    result = audit_directory(vllm, VLLM_ALLOWLIST)
    kinds = {library.path: library.kind for library in result.libraries}
    assert kinds == {
        "_C.abi3.so": "stable",
        "_moe_C.abi3.so": "stable",
        "fs_io_C.abi3.so": "no-torch",
        FA2: "stable",
        FA3: "stable",
        **dict.fromkeys(DEEP_GEMM, "unstable"),
    }
    # "_C.abi3.so" (a ROCm entry) matches the stable CUDA _C here: vLLM calls it stale.
    assert result.check_lines == (
        f"Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: {FA3}, _C.abi3.so",
    )
    assert result.exit_code == 1
    decisions = {verdict.pattern: verdict.decision for verdict in result.patterns}
    assert decisions == {
        FA3: "delete",
        "third_party/deep_gemm/_C*.so": "keep",
        "_C.abi3.so": "delete",
        "_rocm_C.abi3.so": "not-on-this-platform",
    }


def test_unstable_symbols_are_demangled_and_the_first_few_kept(vllm: Path) -> None:
    result = audit_directory(vllm, VLLM_ALLOWLIST)
    deep_gemm = next(library for library in result.libraries if library.path == DEEP_GEMM[0])
    assert deep_gemm.unstable_count == len(UNSTABLE_SYMBOLS)
    assert deep_gemm.unstable_symbols == UNSTABLE_SYMBOLS[: abi.SHOWN_SYMBOLS]


def test_passes_when_the_allowlist_is_exact(vllm: Path) -> None:
    result = audit_directory(vllm, ["third_party/deep_gemm/_C*.so", "_rocm_C.abi3.so"])
    assert result.check_lines == ()
    assert result.exit_code == 0


def test_outside_line_and_one_glob_for_the_per_python_builds(vllm: Path) -> None:
    result = audit_directory(vllm, ["_rocm_C.abi3.so"], variable="ALLOWED")
    assert result.check_lines == (
        "Not allowed: torch-unstable libraries outside ALLOWED: " + ", ".join(DEEP_GEMM),
    )
    assert set(result.proposed.values()) == {
        "third_party/deep_gemm/_C.cpython-*-x86_64-linux-gnu.so"
    }


def test_mixed_pattern_is_narrowed_not_deleted(tmp_path: Path, fake_libs: FakeLibraries) -> None:
    root = fake_libs.package(tmp_path / "vllm", {FA2: "stable", FA3: "unstable"})
    result = audit_directory(root, ["vllm_flash_attn/*"])
    assert result.check_lines == (
        "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: vllm_flash_attn/*",
    )
    (verdict,) = result.patterns
    assert (verdict.decision, verdict.unstable, verdict.other) == ("narrow", (FA3,), (FA2,))
    assert verdict.replacement == (FA3,)


def test_both_lines(tmp_path: Path, fake_libs: FakeLibraries) -> None:
    root = fake_libs.package(tmp_path / "vllm", {FA2: "stable", "_C.abi3.so": "unstable"})
    result = audit_directory(root, [FA2])
    assert result.check_lines == (
        "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: _C.abi3.so",
        f"Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: {FA2}",
    )


def test_missing_nm_is_an_error_never_a_pass(
    vllm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(AuditError) as raised:
        audit_directory(vllm, ["third_party/deep_gemm/_C*.so"])
    assert str(raised.value) == MSG_NO_NM


def test_a_library_that_fails_inspection_is_an_error(
    vllm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the up-front check, torch-abi-audit reports every library as an
    # error: vLLM's check would then pass; we must not.
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(abi, "nm_available", lambda: True)
    with pytest.raises(AuditError, match=r"^failed to inspect _C\.abi3\.so: 'nm' not found"):
        audit_directory(vllm, [])


def test_torch_abi_audit_calls_a_corrupt_library_no_torch(tmp_path: Path) -> None:
    """Why we check headers ourselves: its verdict would make an entry look stale."""
    corrupt = tmp_path / "_C.abi3.so"
    corrupt.write_bytes(b"not a library at all")
    report = inspect_extension(corrupt)
    assert report.error is None
    assert not report.torch.uses_torch


def test_a_corrupt_library_is_an_error(vllm: Path) -> None:
    (vllm / "_broken.abi3.so").write_bytes(b"not a library at all")
    with pytest.raises(AuditError) as raised:
        audit_directory(vllm, ["_broken.abi3.so"])
    assert str(raised.value) == f"failed to inspect _broken.abi3.so: {NOT_ELF}"


def test_a_truncated_library_is_an_error(vllm: Path) -> None:
    library = vllm / DEEP_GEMM[0]
    library.write_bytes(library.read_bytes()[:4096])
    with pytest.raises(AuditError, match=r"^failed to inspect third_party/.*: truncated"):
        audit_directory(vllm, [])


def test_cpu_variant_build_is_refused(tmp_path: Path, fake_libs: FakeLibraries) -> None:
    layout: dict[str, Kind] = {
        "_C.abi3.so": "stable",
        "_C_AVX2.abi3.so": "unstable",
        "_C_AVX512.abi3.so": "unstable",
    }
    root = fake_libs.package(tmp_path / "vllm", layout)
    with pytest.raises(AuditError, match=r"\(_C_AVX2\.abi3\.so, _C_AVX512\.abi3\.so\)"):
        audit_directory(root, ["_C.abi3.so"])


def test_versioned_sonames_are_not_audited(tmp_path: Path, fake_libs: FakeLibraries) -> None:
    root = fake_libs.package(
        tmp_path / "vllm", {"_C.abi3.so": "stable", "libs/libx.so.1": "unstable"}
    )
    result = audit_directory(root, [])
    assert result.libraries == (LibraryVerdict("_C.abi3.so", "stable"),)


def test_no_libraries_or_no_directory(tmp_path: Path) -> None:
    with pytest.raises(AuditError) as raised:
        audit_directory(tmp_path, [])
    assert str(raised.value) == MSG_NO_LIBRARIES.format(root=tmp_path)
    missing = tmp_path / "missing"
    with pytest.raises(AuditError) as raised:
        audit_directory(missing, [])
    assert str(raised.value) == MSG_NOT_WHEEL_OR_DIR.format(target=missing)
