"""``classify(..., lines=...)``: lines already cleaned are read instead of the log tail."""

from __future__ import annotations

import pytest

from bot.abi.log import clean_log
from bot.failures.classify import (
    EVIDENCE_EMPTY_LOG,
    EVIDENCE_IMAGE_MISSING,
    EVIDENCE_INFRA_LINE,
    EVIDENCE_RULE_LINE,
    WHY_NO_HISTORY,
    WHY_NOT_READ,
    FailureClass,
    FlakyRule,
    Verdict,
    classify,
)
from bot.failures.signature import signature_from_lines

from .helpers import bk, failure, log, main_run

MISSING = (
    "docker: Error response from daemon: manifest for "
    "registry.example/repo:abc-cpu not found: manifest unknown"
)
PYTEST = [
    "FAILED tests/kernels/test_attention.py::test_decode[fp8] - AssertionError: mismatch",
    "==== 1 failed, 12 passed in 3.21s ====",
]


@pytest.mark.parametrize("name", ["pytest_failures", "image_pull_docker", "disk_full"])
def test_cleaned_lines_give_the_verdict_of_the_raw_log(name: str) -> None:
    raw = log(name)
    history = [main_run(5, passed=True)]
    assert classify(failure(None), history=history, lines=clean_log(raw)) == classify(
        failure(raw), history=history
    )


def test_lines_are_read_when_the_log_tail_was_not() -> None:
    verdict = classify(failure(None), history=[], lines=["pulling image", MISSING])
    assert verdict == Verdict(
        FailureClass.IMAGE_MISSING,
        EVIDENCE_IMAGE_MISSING.format(line=MISSING),
        rule="image-missing",
    )
    assert classify(failure(None), history=[]) == Verdict(FailureClass.NEW_FAILURE, WHY_NOT_READ)


def test_lines_win_over_the_log_tail() -> None:
    # The tail says the image is missing; the lines (the caller's read) do not.
    tail = log("image_pull_docker")
    assert classify(failure(tail), history=[]).failure_class is FailureClass.IMAGE_MISSING
    verdict = classify(failure(tail), history=[], lines=PYTEST)
    signature = signature_from_lines(PYTEST)
    assert verdict.failure_class is FailureClass.NEW_FAILURE
    assert verdict.evidence == f"{signature.describe()}; {WHY_NO_HISTORY}"
    # And the other way round.
    other = classify(failure(bk(PYTEST)), history=[], lines=[MISSING])
    assert other.failure_class is FailureClass.IMAGE_MISSING


def test_empty_lines_are_an_empty_log_whatever_the_tail() -> None:
    for lines in ([], ["", "   "]):
        verdict = classify(failure(log("pytest_failures")), history=[], lines=lines)
        assert verdict == Verdict(FailureClass.INFRA, EVIDENCE_EMPTY_LOG)


def test_infra_patterns_search_the_lines() -> None:
    lines = ["Installing", "OSError: [Errno 28] No space left on device"]
    verdict = classify(failure(None), history=[], lines=lines)
    assert verdict == Verdict(
        FailureClass.INFRA,
        EVIDENCE_INFRA_LINE.format(name="disk-full", line=lines[1]),
        rule="disk-full",
    )


def test_known_flaky_rules_search_the_lines() -> None:
    rule = FlakyRule("widget-flake", r"WidgetGlitch: transient")
    lines = ["WidgetGlitch: transient state", *PYTEST]
    verdict = classify(failure(None), history=[], rules=[rule], lines=lines)
    assert verdict == Verdict(
        FailureClass.KNOWN_FLAKY,
        EVIDENCE_RULE_LINE.format(name="widget-flake", line=lines[0]),
        rule="widget-flake",
    )


def test_lines_are_compared_with_main_history() -> None:
    signature = signature_from_lines(PYTEST)
    history = [main_run(7, passed=False, signature=signature)]
    verdict = classify(failure(None), history=history, lines=tuple(PYTEST))
    assert verdict.failure_class is FailureClass.BROKEN_TRUNK
    assert verdict.link == "https://buildkite.example/vllm/ci/builds/7"
