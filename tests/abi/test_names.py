"""Allowlist matching, CPU-variant detection and proposed patterns (no libraries needed)."""

from __future__ import annotations

import pytest

from bot.abi.judge import AuditError, patterns_by_path, propose_pattern
from bot.abi.names import cpu_variant_files, escape, matches, refuse_cpu_variant

DEEP_GEMM = [
    f"third_party/deep_gemm/_C.cpython-{version}-x86_64-linux-gnu.so"
    for version in (310, 311, 312, 313, 314)
]
DEEP_GEMM_GLOB = "third_party/deep_gemm/_C.cpython-*-x86_64-linux-gnu.so"


def test_star_crosses_directories_as_in_vllms_check() -> None:
    assert matches("third_party/deep_gemm/_C.abi3.so", "*_C.abi3.so")
    assert matches("vllm_flash_attn/_vllm_fa3_C.abi3.so", "vllm_flash_attn/*")
    assert not matches("_C.abi3.so", "_c.abi3.so")  # case-sensitive, as on Linux


def test_five_per_python_builds_get_one_glob() -> None:
    assert propose_pattern(DEEP_GEMM) == (DEEP_GEMM_GLOB,)
    assert patterns_by_path(DEEP_GEMM) == dict.fromkeys(DEEP_GEMM, DEEP_GEMM_GLOB)
    assert all(matches(path, DEEP_GEMM_GLOB) for path in DEEP_GEMM)


def test_the_glob_leaves_the_stable_abi3_sibling_out() -> None:
    others = ["third_party/deep_gemm/_C.abi3.so", "_C.abi3.so"]
    (glob,) = propose_pattern(DEEP_GEMM, others=others)
    assert not any(matches(path, glob) for path in others)


def test_a_single_per_python_build_still_gets_the_version_glob() -> None:
    assert propose_pattern(DEEP_GEMM[:1]) == (DEEP_GEMM_GLOB,)


def test_free_threaded_builds_join_their_family() -> None:
    paths = ["_C.cpython-313-x86_64-linux-gnu.so", "_C.cpython-313t-x86_64-linux-gnu.so"]
    assert propose_pattern(paths) == ("_C.cpython-*-x86_64-linux-gnu.so",)


def test_a_glob_that_would_cover_another_library_falls_back_to_exact_paths() -> None:
    stable_sibling = "third_party/deep_gemm/_C.cpython-39-x86_64-linux-gnu.so"
    proposed = propose_pattern(DEEP_GEMM[:2], others=[stable_sibling, *DEEP_GEMM[:2]])
    assert proposed == tuple(DEEP_GEMM[:2])


def test_other_paths_get_exact_escaped_patterns_in_first_use_order() -> None:
    paths = ["vllm_flash_attn/_vllm_fa3_C.abi3.so", "odd/lib[1]*?.so", "_C.abi3.so"]
    proposed = propose_pattern(paths)
    assert proposed == (
        "vllm_flash_attn/_vllm_fa3_C.abi3.so",
        "odd/lib[[]1][*][?].so",
        "_C.abi3.so",
    )
    assert matches("odd/lib[1]*?.so", proposed[1])
    assert not matches("odd/lib1xy.so", proposed[1])


def test_platforms_stay_apart() -> None:
    arm = "_C.cpython-312-aarch64-linux-gnu.so"
    x86 = "_C.cpython-312-x86_64-linux-gnu.so"
    assert propose_pattern([arm, x86]) == (
        "_C.cpython-*-aarch64-linux-gnu.so",
        "_C.cpython-*-x86_64-linux-gnu.so",
    )


def test_escape_is_identity_without_glob_characters() -> None:
    assert escape("vllm_flash_attn/_vllm_fa2_C.abi3.so") == "vllm_flash_attn/_vllm_fa2_C.abi3.so"


@pytest.mark.parametrize(
    ("paths", "found"),
    [
        (
            ["_C.abi3.so", "_C_AVX2.abi3.so", "_C_AVX512.abi3.so"],
            ("_C_AVX2.abi3.so", "_C_AVX512.abi3.so"),
        ),
        (["sub/_C_AVX512_BF16.so"], ("sub/_C_AVX512_BF16.so",)),
        (["_C.abi3.so", "_moe_C.abi3.so", "x_C_AVX2.abi3.so", "_C_AVX2.abi3.so.1"], ()),
    ],
)
def test_cpu_variant_files(paths: list[str], found: tuple[str, ...]) -> None:
    assert cpu_variant_files(paths) == found


def test_refuse_cpu_variant_names_the_files() -> None:
    with pytest.raises(AuditError, match=r"CPU-variant build detected \(_C_AVX2\.abi3\.so\)"):
        refuse_cpu_variant(["_C.abi3.so", "_C_AVX2.abi3.so"])
    refuse_cpu_variant(["_C.abi3.so"])  # a CUDA build passes
