"""vLLM's rules and our decisions on given verdicts (no libraries needed)."""

from __future__ import annotations

from bot.abi.judge import LibraryVerdict, PatternVerdict, judge

FA2 = "vllm_flash_attn/_vllm_fa2_C.abi3.so"
FA3 = "vllm_flash_attn/_vllm_fa3_C.abi3.so"
DEEP_GEMM = [
    f"third_party/deep_gemm/_C.cpython-{version}-x86_64-linux-gnu.so"
    for version in (310, 311, 312, 313, 314)
]


def unstable(path: str) -> LibraryVerdict:
    return LibraryVerdict(path, "unstable", ("c10::fake_warn(int)",), 1)


def stable(path: str) -> LibraryVerdict:
    return LibraryVerdict(path, "stable")


def no_torch(path: str) -> LibraryVerdict:
    return LibraryVerdict(path, "no-torch")


def test_all_covered_passes_with_no_lines() -> None:
    result = judge([unstable(FA3), stable("_C.abi3.so")], ["vllm_flash_attn/_vllm_fa3_C.abi3.so"])
    assert result.check_lines == ()
    assert result.exit_code == 0
    assert result.patterns == (PatternVerdict(FA3, (FA3,), (), "keep"),)
    assert result.unexpected == ()
    assert result.proposed == {}


def test_outside_line_lists_sorted_paths() -> None:
    result = judge([unstable("z.so"), unstable("a/b.so"), stable("c.so")], [])
    assert result.check_lines == (
        "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: a/b.so, z.so",
    )
    assert result.exit_code == 1
    assert [library.path for library in result.unexpected] == ["a/b.so", "z.so"]
    assert result.proposed == {"a/b.so": "a/b.so", "z.so": "z.so"}


def test_stale_line_keeps_allowlist_order_and_counts_no_torch_as_stale() -> None:
    libraries = [stable(FA2), no_torch("fs_io_C.abi3.so"), unstable(FA3)]
    allowlist = ["fs_io_C.abi3.so", FA3, FA2]
    result = judge(libraries, allowlist)
    assert result.check_lines == (
        "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: fs_io_C.abi3.so, " + FA2,
    )
    assert [verdict.decision for verdict in result.patterns] == ["delete", "keep", "delete"]


def test_both_lines_outside_first_then_stale_with_the_given_variable() -> None:
    result = judge([unstable("_C.abi3.so"), stable(FA2)], [FA2], variable="MY_LIST")
    assert result.check_lines == (
        "Not allowed: torch-unstable libraries outside MY_LIST: _C.abi3.so",
        "Not allowed: stale MY_LIST entries: " + FA2,
    )
    assert result.exit_code == 1
    assert result.variable == "MY_LIST"


def test_a_mixed_pattern_is_stale_for_vllm_but_narrowed_by_us() -> None:
    result = judge([stable(FA2), unstable(FA3)], ["vllm_flash_attn/*"])
    assert result.check_lines == (
        "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: vllm_flash_attn/*",
    )
    (verdict,) = result.patterns
    assert verdict == PatternVerdict("vllm_flash_attn/*", (FA3,), (FA2,), "narrow", (FA3,))
    assert result.unexpected == ()  # still covered: deleting it would break CI


def test_narrowing_a_per_python_family_gives_one_glob() -> None:
    libraries = [*map(unstable, DEEP_GEMM), stable("third_party/deep_gemm/_C.abi3.so")]
    result = judge(libraries, ["third_party/deep_gemm/*"])
    (verdict,) = result.patterns
    assert verdict.decision == "narrow"
    assert verdict.replacement == ("third_party/deep_gemm/_C.cpython-*-x86_64-linux-gnu.so",)


def test_unmatched_entry_is_not_on_this_platform_and_never_stale() -> None:
    result = judge([unstable("_C.abi3.so")], ["_C.abi3.so", "_rocm_C.abi3.so"])
    assert result.check_lines == ()
    assert result.patterns[1] == PatternVerdict("_rocm_C.abi3.so", (), (), "not-on-this-platform")


def test_per_python_unexpected_libraries_share_one_proposal() -> None:
    result = judge([*map(unstable, reversed(DEEP_GEMM)), stable("_C.abi3.so")], ["_C.abi3.so"])
    assert result.check_lines[0] == (
        "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: "
        + ", ".join(DEEP_GEMM)
    )
    assert set(result.proposed.values()) == {
        "third_party/deep_gemm/_C.cpython-*-x86_64-linux-gnu.so"
    }
    assert list(result.proposed) == DEEP_GEMM


def test_libraries_are_sorted_and_duplicates_in_the_allowlist_are_judged_each_time() -> None:
    result = judge([stable("b.so"), stable("a.so")], ["a.so", "a.so"])
    assert [library.path for library in result.libraries] == ["a.so", "b.so"]
    assert result.check_lines == (
        "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: a.so, a.so",
    )
