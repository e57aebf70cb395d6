"""The evidence of a long matched line whose match the stripped line no longer shows."""

from __future__ import annotations

from bot.failures.classify import EXCERPT_CHARS, FailureClass, FlakyRule, classify

from .helpers import bk, failure


def test_a_rule_anchored_on_indentation_shows_the_head_of_the_long_line() -> None:
    # The rule matches the raw line's indentation; the evidence is the stripped line, where
    # the rule no longer matches, so it shows the line's head rather than the match.
    rule = FlakyRule("indented-nccl", r"^\s{4}worker \d+: .*NCCL timeout")
    line = "    worker 3: " + "x" * 200 + " NCCL timeout"

    verdict = classify(failure(bk([line])), history=[], rules=[rule])

    assert verdict.failure_class is FailureClass.KNOWN_FLAKY
    assert verdict.evidence == f"rule indented-nccl: {line.strip()[: EXCERPT_CHARS - 1]}…"
