"""A flow's outcome reads as one log line: the enum's words, then the detail if any."""

from __future__ import annotations

from bot.landing.state import Landing, LandingOutcome
from bot.retry.request import Retried, RetryFlakyOutcome


def test_an_outcome_without_detail_is_its_words() -> None:
    assert str(Landing(LandingOutcome.NOT_APPROVED)) == "not approved for landing"


def test_an_outcome_with_detail_adds_it() -> None:
    done = Retried(RetryFlakyOutcome.RETRIED, "2 of 3")
    assert str(done) == "failed jobs retried: 2 of 3"
    assert done.outcome is RetryFlakyOutcome.RETRIED
    assert done == Retried(RetryFlakyOutcome.RETRIED, "2 of 3")
