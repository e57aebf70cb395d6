"""The flaky table: the flakiest steps and rules, from the retry audit trail (`report flaky`
and the dashboard show it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NOTHING_YET = "No retries recorded yet."


@dataclass(frozen=True)
class FlakyStep:
    """One step's retries in the audit trail (a row of the report, and of the status page)."""

    step: str
    retries: int
    passed: int  # passed on retry: flaky confirmed
    failed: int  # failed again


def flaky_steps(records: Iterable[Mapping[str, Any]], *, top: int = 20) -> list[FlakyStep]:
    """The ``top`` steps, those most often confirmed flaky first."""
    retries: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for record in records:
        step = _step(record)
        retries[step] += 1
        passed[step] += record.get("outcome") == "passed"
        failed[step] += record.get("outcome") == "failed"
    ranked = sorted(retries.items(), key=lambda kv: (-passed[kv[0]], -kv[1], kv[0]))[:top]
    return [FlakyStep(step, count, passed[step], failed[step]) for step, count in ranked]


def flaky_report(records: Iterable[Mapping[str, Any]], *, top: int = 20) -> str:
    """Per step and per rule: retries, passed on retry (flaky confirmed), failed again."""
    records = list(records)
    steps = flaky_steps(records, top=top)
    if not steps:
        return NOTHING_YET
    rules: Counter[str] = Counter()
    rules_passed: Counter[str] = Counter()
    for record in records:
        rule = record.get("rule") or (f"({record.get('class')})" if record.get("class") else None)
        if rule:
            rules[str(rule)] += 1
            rules_passed[str(rule)] += record.get("outcome") == "passed"
    lines = ["| step | retries | passed on retry | failed again |", "|---|---|---|---|"]
    for row in steps:
        lines.append(f"| {row.step} | {row.retries} | {row.passed} | {row.failed} |")
    lines += ["", "| rule or class | retries | passed on retry |", "|---|---|---|"]
    for rule, count in rules.most_common(top):
        lines.append(f"| {rule} | {count} | {rules_passed[rule]} |")
    return "\n".join(lines)


def _step(record: Mapping[str, Any]) -> str:
    return str(record.get("step_key") or record.get("name") or "?")
