"""One doctor check's outcome, and the table they are printed as."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "FAIL", "skip"]
OK: Status = "ok"
FAIL: Status = "FAIL"
SKIP: Status = "skip"

HEADER = ("check", "result", "detail", "fix")
SUMMARY_OK = "all {count} checks passed"
SUMMARY_FAILED = "{failed} of {count} checks failed"


@dataclass(frozen=True)
class CheckResult:
    check: str
    status: Status
    detail: str
    fix: str = ""  # said for a failure only


def ok(check: str, detail: str) -> CheckResult:
    return CheckResult(check, OK, detail)


def failed(check: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(check, FAIL, detail, fix)


def skipped(check: str, detail: str) -> CheckResult:
    return CheckResult(check, SKIP, detail)


def render(results: Sequence[CheckResult]) -> str:
    """A plain-text table, columns padded to their widest cell, then one summary line."""
    rows = [HEADER, *((r.check, r.status, r.detail, r.fix) for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    failures = sum(1 for r in results if r.status == FAIL)
    summary = (
        SUMMARY_FAILED.format(failed=failures, count=len(results))
        if failures
        else SUMMARY_OK.format(count=len(results))
    )
    return "\n".join([*lines, "", summary]) + "\n"
