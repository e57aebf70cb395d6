"""Laws of the signature and the classifier, on generated logs."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from bot.failures.classify import Failure, FailureClass, FlakyRule, MainRun, Verdict, classify
from bot.failures.signature import Signature, failure_signature

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=10)
_PARAM = st.text(alphabet="abcxyz019-._/ ", min_size=1, max_size=16)
_COLOURS = st.sampled_from(["", "\x1b[31m", "\x1b[1;31m", "\x1b[90m", "\x1b[38;5;196m"])


@st.composite
def node_ids(draw: st.DrawFn) -> str:
    path = f"tests/{draw(_WORD)}/test_{draw(_WORD)}.py"
    node = f"{path}::test_{draw(_WORD)}"
    if draw(st.booleans()):
        node += f"[{draw(_PARAM)}]"
    return draw(st.sampled_from([path, node]))


def _raw(lines: list[str], *, stamps: list[int] | None, colours: list[str]) -> bytes:
    """``lines`` as a log, with or without Buildkite markers and colours."""
    out = []
    for index, line in enumerate(lines):
        colour = colours[index % len(colours)] if colours else ""
        if colour:
            line = f"{colour}{line}\x1b[0m"
        if stamps is not None:
            line = f"\x1b_bk;t={stamps[index % len(stamps)]}\x07{line}"
        out.append(line + "\r\n")
    return "".join(out).encode()


def _summary(ids: list[str], reasons: list[str]) -> list[str]:
    lines = ["=========================== short test summary info ==========================="]
    for index, test_id in enumerate(ids):
        reason = reasons[index % len(reasons)] if reasons else ""
        lines.append(f"FAILED {test_id}" + (f" - {reason}" if reason else ""))
    lines.append("========= some failed in 12.34s =========")
    return lines


@given(
    ids=st.lists(node_ids(), min_size=1, max_size=8),
    reasons=st.lists(
        st.sampled_from(["", "AssertionError: assert [1] == [2]", "x - y ]"]), max_size=3
    ),
    stamps=st.lists(st.integers(0, 2**45), min_size=1, max_size=5),
    colours=st.lists(_COLOURS, max_size=4),
    order=st.randoms(use_true_random=False),
)
def test_signature_is_the_sorted_ids_whatever_the_markers_colours_and_order(
    ids: list[str],
    reasons: list[str],
    stamps: list[int],
    colours: list[str],
    order: random.Random,
) -> None:
    plain = failure_signature(_raw(_summary(ids, reasons), stamps=None, colours=[]))
    assert plain == Signature("tests", tuple(sorted(set(ids))))
    shuffled = list(ids) + list(ids[:2])  # and repeated, as a second pytest run would
    order.shuffle(shuffled)
    decorated = _raw(_summary(shuffled, reasons), stamps=stamps, colours=colours)
    assert failure_signature(decorated) == plain


@given(
    line=st.sampled_from(
        [
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "TimeoutError: server pid 48211 not ready after 600.2s (log /tmp/tmpk3j9x2ab/s.log)",
            "[rank0]: torch.distributed.DistBackendError: NCCL error, NCCL version 2.21.5",
            "Fatal Python error: Segmentation fault",
        ]
    ),
    before=st.lists(st.sampled_from(["collected 3 items", "INFO loading", ""]), max_size=4),
    stamps=st.lists(st.integers(0, 2**45), min_size=1, max_size=3),
    colours=st.lists(_COLOURS, max_size=3),
)
def test_error_signature_ignores_markers_and_colours(
    line: str, before: list[str], stamps: list[int], colours: list[str]
) -> None:
    lines = [*before, line, "🚨 Error: The command exited with status 1"]
    plain = failure_signature(_raw(lines, stamps=None, colours=[]))
    assert plain.kind == "error"
    assert failure_signature(_raw(lines, stamps=stamps, colours=colours)) == plain


_RUNS = st.builds(
    MainRun,
    build_number=st.integers(1, 10_000),
    build_url=st.just("https://buildkite.example/vllm/ci/builds/1"),
    commit=st.sampled_from(["a" * 40, "b" * 40, "c" * 40]),
    finished_at=st.floats(0, 2e9, allow_nan=False),
    passed=st.booleans(),
    signature=st.one_of(st.none(), st.binary(max_size=300).map(failure_signature)),
    passed_on_retry=st.booleans(),
)


@given(
    tail=st.one_of(st.none(), st.binary(max_size=3000)),
    state=st.sampled_from(["failed", "timed_out", "expired", "broken"]),
    exit_status=st.one_of(st.none(), st.integers(-2, 255)),
    signal_reason=st.one_of(
        st.none(), st.sampled_from(["agent_stop", "cancel", "x"]), st.text(max_size=8)
    ),
    history=st.lists(_RUNS, max_size=5),
    pr_commit=st.sampled_from([None, "a" * 40]),
)
def test_classify_is_deterministic_and_never_raises(
    tail: bytes | None,
    state: str,
    exit_status: int | None,
    signal_reason: str | None,
    history: list[MainRun],
    pr_commit: str | None,
) -> None:
    failure = Failure("j1", "step-a", "Step A", state, exit_status, signal_reason, "u", tail)
    rules = [FlakyRule("any-assert", r"AssertionError", step="step-*")]
    first = classify(failure, history=history, rules=rules, pr_commit=pr_commit)
    again = classify(failure, history=list(history), rules=rules, pr_commit=pr_commit)
    assert isinstance(first, Verdict)
    assert first == again
    assert first.evidence
    assert len(first.evidence) <= 240
    if first.failure_class is FailureClass.BROKEN_TRUNK:
        assert first.link is not None
