"""The dashboard issue's content: the data it shows and its markdown, pure and deterministic.

The body is compared with the last one written to decide whether to edit the
issue at all, so the same data must always give the same text: rows are
sorted, ages are whole days, dates are UTC days, nothing says "generated at".
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.dashboard.red_text import MainSection, render_main
from bot.dashboard.routing_text import RoutingSection, render_routing
from bot.github import neutralise
from bot.retry.report import flaky_report

DASHBOARD_TITLE = "followup-bot dashboard"
MARKER = "<!-- followup-bot:dashboard -->"
RECENT_RETRIES = 10  # the issue body is capped by GitHub (65536 characters): keep it short
FLAKIEST_TOP = 10
SHORT_SHA = 7

INTRO = (
    "What followup-bot knows about this repository's pins, allowlist entries and "
    "retries. The bot compares this issue with what it knows on every reconcile tick "
    "and rewrites it when they differ, so an edit by hand is undone at the next tick. "
    "Comment `@{handle} help` on a bump PR for the commands."
)
HEADING_CONFIG_ERRORS = "## Configuration errors"
CONFIG_ERRORS_NOTE = "The bot changes nothing in this repository until these are fixed:"
HEADING_PINS = "## Pins"
HEADING_ALLOWLIST = "## Allowlist entries"
HEADING_RETRIES = "## Recent retry-flaky decisions"
HEADING_FLAKIEST = "## Flakiest steps"
NO_PINS = "No pins configured."
NO_ENTRIES = "No allowlist evidence recorded yet."
NO_RETRIES = "No retries recorded yet."
UNKNOWN = "?"
NONE = "-"
LESS_THAN_A_DAY = "< 1 day"

PIN_HEADER = (
    "| pin | follows | pinned | kept in sync | upstream head | behind | oldest unrolled commit "
    "| bump PR | paused | last failure |\n|---|---|---|---|---|---|---|---|---|---|"
)
FOLLOWS_BRANCH = "branch {branch}"
FOLLOWS_TAGS = "tags {tags}"
COMPANION_AGREES = "{file} ✓"
COMPANION_DISAGREES = "{file} ✗ ({problem})"
ENTRY_HEADER = "| entry | owning pin | last evidence | date |\n|---|---|---|---|"
RETRY_HEADER = (
    "| date | PR | step | class | rule | outcome | asked by | reason |\n"
    "|---|---|---|---|---|---|---|---|"
)


@dataclass(frozen=True)
class PinRow:
    name: str
    pinned: str | None  # the commit (or tag) the default branch pins
    upstream_head: str | None  # the head of the upstream branch the pin follows
    behind: int | None  # upstream commits not in the pin yet
    oldest_unrolled_age_days: float | None  # age of the oldest of those; None when current
    pr: int | None  # the bump PR, if the bot has one
    pr_state: str | None  # e.g. "open", "merged", "closed by a human"
    paused: bool
    last_failure: str | None  # why the bot last could not act on this pin
    follows: str | None = None  # "branch main" or "tags v*" (None: no config to say)
    # Files that must agree with the pin: (file, None) agrees, (file, problem) does not.
    companions: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class EntryRow:
    pattern: str
    owner_pin: str | None  # the pin whose `owns` globs cover the pattern
    evidence: str | None  # "stale" | "unstable" | "not on this platform" | None
    date: str | None  # UTC day of that evidence, YYYY-MM-DD


@dataclass(frozen=True)
class RetryRow:
    """One job the bot retried (a `retry-job` record), as the dashboard shows it."""

    job_id: str
    pr: int | None
    step: str
    job_class: str | None
    rule: str | None
    outcome: str | None  # "passed" | "failed" | None while the retried job runs
    requested_by: str | None
    reason: str | None
    at: float

    def as_record(self) -> dict[str, Any]:
        """The fields ``bot.retry.report.flaky_report`` reads; it puts the text ones in table
        cells as they are, so they are neutralised here (they come from Buildkite)."""
        return {
            "step_key": _cell(self.step),
            "class": _cell(self.job_class) if self.job_class else None,
            "rule": _cell(self.rule) if self.rule else None,
            "outcome": self.outcome,
        }


@dataclass(frozen=True)
class DashboardData:
    repo: str
    config_errors: tuple[str, ...] = ()
    pins: tuple[PinRow, ...] = ()
    entries: tuple[EntryRow, ...] = ()
    retries: tuple[RetryRow, ...] = ()  # every retry of the repo, newest first
    routing: RoutingSection | None = None  # None: the repository asks nothing of routing
    main: MainSection | None = None  # None: nothing watched on main, no image checked


def render(data: DashboardData, *, handle: str) -> str:
    """The issue body: config errors first (when any), then pins, allowlist, retries
    and (once there are retries) the flakiest steps."""
    parts: list[str] = [INTRO.format(handle=handle)]
    if data.config_errors:
        errors = "\n".join(data.config_errors)
        parts += [HEADING_CONFIG_ERRORS, CONFIG_ERRORS_NOTE, neutralise.code_block(errors, "text")]
    parts += [HEADING_PINS, _pins(data.pins)]
    parts += [HEADING_ALLOWLIST, _entries(data.entries)]
    parts += [HEADING_RETRIES, _retries(data.retries[:RECENT_RETRIES])]
    if data.retries:
        records = (row.as_record() for row in data.retries)
        parts += [HEADING_FLAKIEST, flaky_report(records, top=FLAKIEST_TOP)]
    if data.routing is not None:
        parts += render_routing(data.routing)
    if data.main is not None:
        checked = data.main.images.checked_at if data.main.images is not None else 0.0
        parts += render_main(data.main, when=utc_day(checked))
    parts.append(MARKER)
    return "\n\n".join(parts) + "\n"


def _pins(rows: Sequence[PinRow]) -> str:
    if not rows:
        return NO_PINS
    lines = [PIN_HEADER]
    for row in sorted(rows, key=lambda r: r.name):
        pr = NONE if row.pr is None else f"#{row.pr}"
        if row.pr is not None and row.pr_state:
            pr += f" ({_cell(row.pr_state)})"
        cells = [
            _cell(row.name),
            UNKNOWN if row.follows is None else _code(row.follows),
            _sha(row.pinned),
            _companions(row.companions),
            _sha(row.upstream_head),
            UNKNOWN if row.behind is None else str(row.behind),
            _age(row.oldest_unrolled_age_days, row.behind),
            pr,
            "yes" if row.paused else "no",
            NONE if not row.last_failure else _cell(row.last_failure),
        ]
        lines.append(_row(cells))
    return "\n".join(lines)


def _entries(rows: Sequence[EntryRow]) -> str:
    if not rows:
        return NO_ENTRIES
    lines = [ENTRY_HEADER]
    for row in sorted(rows, key=lambda r: r.pattern):
        cells = [
            _code(row.pattern),
            _cell(row.owner_pin) if row.owner_pin else NONE,
            _cell(row.evidence) if row.evidence else NONE,
            _cell(row.date) if row.date else NONE,
        ]
        lines.append(_row(cells))
    return "\n".join(lines)


def _retries(rows: Iterable[RetryRow]) -> str:
    lines = [RETRY_HEADER]
    for row in rows:
        cells = [
            utc_day(row.at),
            NONE if row.pr is None else f"#{row.pr}",
            _code(row.step),
            _cell(row.job_class) if row.job_class else NONE,
            _cell(row.rule) if row.rule else NONE,
            _cell(row.outcome) if row.outcome else "running",
            f"@{row.requested_by}" if row.requested_by else NONE,
            _cell(row.reason) if row.reason else NONE,
        ]
        lines.append(_row(cells))
    return NO_RETRIES if len(lines) == 1 else "\n".join(lines)


def utc_day(epoch: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def _age(days: float | None, behind: int | None) -> str:
    if days is None:
        # Nothing unrolled (behind 0) has no age; otherwise the age is not known yet.
        return NONE if behind == 0 else UNKNOWN
    whole = int(max(days, 0.0))
    if whole == 0:
        return LESS_THAN_A_DAY
    return "1 day" if whole == 1 else f"{whole} days"


def _sha(value: str | None) -> str:
    """A pinned value: a commit sha abbreviated, a tag whole."""
    if not value:
        return UNKNOWN
    return _code(value[:SHORT_SHA] if _FULL_SHA.fullmatch(value) else value)


_FULL_SHA = re.compile(r"[0-9a-f]{40}")


def _companions(companions: Sequence[tuple[str, str | None]]) -> str:
    if not companions:
        return NONE
    cells = [
        COMPANION_AGREES.format(file=file)
        if problem is None
        else COMPANION_DISAGREES.format(file=file, problem=problem)
        for file, problem in companions
    ]
    return _cell("; ".join(cells))


def _code(text: str) -> str:
    # A quote reads the same as a backtick in a pattern, and keeps the span one backtick.
    return neutralise.code(text.replace("`", "'"), table=True)


def _cell(text: str) -> str:
    """Text safe inside a table cell (a pipe would split it, a newline would end the
    row), and inert: it may come from Buildkite, a log or a comment."""
    return neutralise.inline(text)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
