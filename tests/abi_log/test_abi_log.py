from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.abi.log import PASSED, clean_log, parse_audit_log

STALE = "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: vllm_flash_attn/_vllm_fa3_C.abi3.so"
OUTSIDE = (
    "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: "
    "_C.abi3.so, third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so"
)


def bk(lines: list[str], start_ms: int = 1_754_000_000_000) -> bytes:
    """A raw Buildkite log: timestamp marker before each line, CRLF endings."""
    return "".join(
        f"\x1b_bk;t={start_ms + i}\x07{line}\r\n" for i, line in enumerate(lines)
    ).encode()


def test_stale_line_from_a_real_looking_raw_log() -> None:
    raw = bk(
        [
            "~~~ Running commands",
            "$ python3 .buildkite/check-torch-abi.py",
            "\x1b[31m" + STALE + "\x1b[0m",
            ">>> Auditing vLLM extension modules for PyTorch stable ABI compliance",
            "\x1b[31m🚨 Error: The command exited with status 1\x1b[0m",
        ]
    )
    evidence = parse_audit_log(raw)
    assert evidence.stale == ("vllm_flash_attn/_vllm_fa3_C.abi3.so",)
    assert evidence.outside == ()
    assert not evidence.passed
    assert evidence.lines == (STALE,)


def test_both_lines_in_either_order() -> None:
    for order in ([STALE, OUTSIDE], [OUTSIDE, STALE]):
        evidence = parse_audit_log(bk(order))
        assert evidence.outside == (
            "_C.abi3.so",
            "third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so",
        )
        assert evidence.stale == ("vllm_flash_attn/_vllm_fa3_C.abi3.so",)
        assert set(evidence.lines) == {STALE, OUTSIDE}


def test_passed_and_inspection_error() -> None:
    assert parse_audit_log(bk([">>> Auditing", PASSED])).passed
    failed = parse_audit_log(bk(["error: failed to inspect 'vllm': No module named vllm"]))
    assert not failed.passed
    assert failed.inspection_error == "error: failed to inspect 'vllm': No module named vllm"


def test_a_log_without_a_verdict_is_not_evidence() -> None:
    evidence = parse_audit_log(bk(["pulling image", "Killed"]))
    assert not evidence.found
    assert not evidence.passed


def test_other_variable_names() -> None:
    line = "Not allowed: stale ROCM_ALLOWED entries: _rocm_C.abi3.so"
    assert parse_audit_log(bk([line]), variable="ROCM_ALLOWED").stale == ("_rocm_C.abi3.so",)
    assert parse_audit_log(bk([line])).stale == ()


def test_progress_bar_carriage_returns_keep_the_last_segment() -> None:
    assert clean_log(b"10%\r50%\r100% done\nnext") == ["100% done", "next"]


@given(st.lists(st.from_regex(r"[a-z_/]{1,20}\.so", fullmatch=True), min_size=1, max_size=6))
def test_stale_patterns_round_trip_through_noise(patterns: list[str]) -> None:
    line = "Not allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries: " + ", ".join(patterns)
    raw = bk(["noise \x1b[1mbold\x1b[0m", "\x1b[33m" + line + "\x1b[0m", "more"])
    assert parse_audit_log(raw).stale == tuple(patterns)
