"""``followup-bot report flaky``: the flakiest steps and rules, from the retry audit trail."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

from bot.cli.store_access import EXIT_OK, emit, guarded, with_store
from bot.store.kinds import Kind
from bot.store.protocol import Store
from bot.store.sqlite import Access

NOTHING_YET = "No retries recorded yet."


def flaky_report(records: Iterable[Mapping[str, Any]], *, top: int = 20) -> str:
    """Per step and per rule: retries, passed on retry (flaky confirmed), failed again."""
    retries: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    rules_passed: Counter[str] = Counter()
    for record in records:
        step = str(record.get("step_key") or record.get("name") or "?")
        retries[step] += 1
        passed[step] += record.get("outcome") == "passed"
        failed[step] += record.get("outcome") == "failed"
        rule = record.get("rule") or (f"({record.get('class')})" if record.get("class") else None)
        if rule:
            rules[str(rule)] += 1
            rules_passed[str(rule)] += record.get("outcome") == "passed"
    if not retries:
        return NOTHING_YET
    lines = ["| step | retries | passed on retry | failed again |", "|---|---|---|---|"]
    for step, count in sorted(retries.items(), key=lambda kv: (-passed[kv[0]], -kv[1], kv[0]))[
        :top
    ]:
        lines.append(f"| {step} | {count} | {passed[step]} | {failed[step]} |")
    lines += ["", "| rule or class | retries | passed on retry |", "|---|---|---|"]
    for rule, count in rules.most_common(top):
        lines.append(f"| {rule} | {count} | {rules_passed[rule]} |")
    return "\n".join(lines)


async def _records(store: Store) -> list[dict[str, Any]]:
    return [doc for _key, doc in await store.list_state(Kind.RETRY_JOB)]


def report_command(database: Path, out: TextIO, err: TextIO) -> int:
    """Print the report; a missing, foreign or broken database is one error line (exit 2),
    and it is opened read-only: a wrong path never gets tables created in it."""

    def run() -> int:
        records = asyncio.run(with_store(database, Access.READ, _records))
        emit(out, flaky_report(records))
        return EXIT_OK

    return guarded(run, database, out, err)
