"""A job someone canceled is no failure: its class, evidence and time, before any log rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.failures.classify import (
    EVIDENCE_CANCELED,
    EVIDENCE_CANCELED_UNTIMED,
    RETRY,
    FailureClass,
    FlakyRule,
    Verdict,
    cancel_time,
    canceled_verdict,
    classify,
)

from .helpers import bk, failure, log, main_run

CANCELED = FailureClass.CANCELED


def test_canceled_is_never_retried() -> None:
    assert CANCELED not in RETRY
    assert not canceled_verdict("2025-05-12T10:00:00.000Z").retry


@pytest.mark.parametrize(
    ("finished_at", "shown"),
    [
        ("2025-05-12T10:07:59.123Z", "2025-05-12 10:07 UTC"),  # as Buildkite writes it
        ("2025-05-12T12:07:00+02:00", "2025-05-12 10:07 UTC"),  # another zone, in UTC
        ("2025-05-12T10:07:00", "2025-05-12 10:07 UTC"),  # no zone: taken as UTC
        ("yesterday", None),
        ("", None),
        (None, None),
        (1_747_044_420, None),  # not Buildkite's shape: no time rather than a wrong one
    ],
)
def test_the_time_of_a_cancel(finished_at: object, shown: str | None) -> None:
    assert cancel_time(finished_at) == shown
    expected = EVIDENCE_CANCELED_UNTIMED if shown is None else EVIDENCE_CANCELED.format(when=shown)
    assert canceled_verdict(finished_at) == Verdict(CANCELED, expected)


def test_the_evidence_says_when_and_names_no_canceller() -> None:
    verdict = canceled_verdict("2025-05-12T10:07:59.123Z")
    assert verdict.evidence == "canceled at 2025-05-12 10:07 UTC"
    assert verdict.link is None
    assert verdict.rule is None


@pytest.mark.parametrize("state", ["canceled", "canceling"])
def test_a_canceled_job_is_canceled_whatever_its_log_or_history_says(state: str) -> None:
    broken_on_main = [main_run(50, passed=False, signature=None)]
    rule = FlakyRule("any-assert", r"AssertionError")
    for raw in (None, b"", log("disk_full"), log("pytest_failures"), bk(["manifest unknown"])):
        canceled = replace(
            failure(raw, state=state, exit_status=-1), finished_at="2025-05-12T10:07:00Z"
        )
        verdict = classify(canceled, history=broken_on_main, rules=[rule])
        assert verdict == Verdict(CANCELED, "canceled at 2025-05-12 10:07 UTC")


def test_a_job_failed_on_a_cancel_signal_is_still_judged_as_a_failure() -> None:
    # Buildkite failed it (state `failed`): not canceled, and not infra either.
    verdict = classify(failure(log("pytest_failures"), signal_reason="cancel"), history=[])
    assert verdict.failure_class is FailureClass.NEW_FAILURE
