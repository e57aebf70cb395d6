"""The status page's HTML, pure: plain data in, one self-contained document out.

Server-rendered and readable without JavaScript (there is none). Every value is
escaped: step names, errors and patterns come from webhooks, logs and comments.
The tables wrap long values instead of widening the page.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from html import escape
from typing import TypeVar

from bot.status.model import (
    EntryRow,
    FailureRow,
    FlakyStep,
    MigrationRow,
    PinRow,
    RedRow,
    RepoStatus,
    StatusData,
)

T = TypeVar("T")

TITLE = "followup-bot status"
GENERATED = "Recorded state as of {when}. The page reads the bot's store only."
HEADING_CONFIG_ERRORS = "Configuration errors"
HEADING_PINS = "Pins"
HEADING_ALLOWLIST = "Allowlist entries"
HEADING_MIGRATIONS = "Open migration PRs"
HEADING_RED = "Red steps on main"
HEADING_FLAKIEST = "Flakiest steps"
HEADING_SERVICE = "Service"
HEADING_FAILURES = "Last failed deliveries"
REPO_SECTIONS = (
    HEADING_PINS,
    HEADING_ALLOWLIST,
    HEADING_MIGRATIONS,
    HEADING_RED,
    HEADING_FLAKIEST,
)
NO_REPOSITORIES = "No repository is configured (FOLLOWUP_BOT_REPOSITORIES)."
NO_PINS = "No pin recorded yet."
NO_ENTRIES = "No allowlist evidence recorded yet."
NO_MIGRATIONS = "No migration PR is open."
NO_RED = "No step is red on main."
NO_FLAKY = "No retries recorded yet."
NO_FAILURES = "No delivery has failed."
UNKNOWN = "?"
NONE = "-"
LESS_THAN_A_DAY = "< 1 day"
SHORT_SHA = 7
DAY = 86400.0

PIN_COLUMNS = (
    "pin",
    "pinned",
    "upstream head",
    "behind",
    "oldest unrolled commit",
    "bump PR",
    "PR state",
    "paused",
    "last failure",
)
ENTRY_COLUMNS = ("entry", "owning pin", "last evidence", "date")
MIGRATION_COLUMNS = ("migration", "PR", "steps left", "last result")
RED_COLUMNS = ("step", "red since", "issue", "partial revert")
FLAKY_COLUMNS = ("step", "retries", "passed on retry", "failed again")
FAILURE_COLUMNS = ("received", "delivery", "event", "subject", "attempts", "reason")

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 1rem 1.5rem;
  max-width: 1200px; color: #1f2328; background: #fff; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.3rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem;
  margin-top: 2rem; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; }
th, td { border: 1px solid #d0d7de; padding: .25rem .4rem; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
th { background: #f6f8fa; }
code, pre { font: 13px/1.4 ui-monospace, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
.empty { color: #59636e; font-style: italic; }
.errors { background: #fff1f0; border: 1px solid #cf222e; padding: .5rem; }
"""


def render_page(data: StatusData) -> str:
    """The whole page: one section per repository, then the service's failures."""
    body = [f"<h1>{escape(TITLE)}</h1>", _p(GENERATED.format(when=_when(data.generated_at)))]
    if not data.repos:
        body.append(_empty(NO_REPOSITORIES))
    body += [_repo(status, index) for index, status in enumerate(data.repos)]
    body.append(
        '<section id="service">'
        f"<h2>{escape(HEADING_SERVICE)}</h2>"
        f"<h3>{escape(HEADING_FAILURES)}</h3>"
        + _table("failures", FAILURE_COLUMNS, data.failures, _failure, NO_FAILURES)
        + "</section>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(TITLE)}</title><style>{STYLE}</style></head>"
        "<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _repo(status: RepoStatus, index: int) -> str:
    parts = [f'<section class="repo" id="repo-{index}">', f"<h2>{escape(status.repo)}</h2>"]
    if status.config_errors:
        errors = escape("\n".join(status.config_errors))
        parts.append(f"<h3>{escape(HEADING_CONFIG_ERRORS)}</h3>")
        parts.append(f'<pre class="errors">{errors}</pre>')
    sections: list[tuple[str, str]] = [
        (HEADING_PINS, _table("pins", PIN_COLUMNS, status.pins, _pin, NO_PINS)),
        (HEADING_ALLOWLIST, _table("entries", ENTRY_COLUMNS, status.entries, _entry, NO_ENTRIES)),
        (
            HEADING_MIGRATIONS,
            _table("migrations", MIGRATION_COLUMNS, status.migrations, _migration, NO_MIGRATIONS),
        ),
        (HEADING_RED, _table("red", RED_COLUMNS, status.red, _red, NO_RED)),
        (HEADING_FLAKIEST, _table("flakiest", FLAKY_COLUMNS, status.flakiest, _flaky, NO_FLAKY)),
    ]
    for heading, content in sections:
        parts += [f"<h3>{escape(heading)}</h3>", content]
    parts.append("</section>")
    return "\n".join(parts)


def _table(
    name: str,
    columns: Sequence[str],
    rows: Iterable[T],
    cells: Callable[[T], Sequence[str]],
    empty: str,
) -> str:
    """A table of ``rows`` (``cells`` gives each row's cells, already HTML), or ``empty``."""
    lines = ["<tr>" + "".join(f"<td>{cell}</td>" for cell in cells(row)) + "</tr>" for row in rows]
    if not lines:
        return _empty(empty)
    head = "<tr>" + "".join(f"<th>{escape(column)}</th>" for column in columns) + "</tr>"
    return (
        f'<table class="{name}"><thead>{head}</thead><tbody>' + "".join(lines) + "</tbody></table>"
    )


def _pin(row: PinRow) -> list[str]:
    return [
        _code(row.name),
        _sha(row.pinned),
        _sha(row.upstream_head),
        UNKNOWN if row.behind is None else str(row.behind),
        _age(row.oldest_unrolled_age_days, row.behind),
        _number(row.pr),
        _text(row.pr_state),
        "yes" if row.paused else "no",
        _text(row.last_failure),
    ]


def _entry(row: EntryRow) -> list[str]:
    return [_code(row.pattern), _text(row.owner_pin), _text(row.evidence), _text(row.date)]


def _migration(row: MigrationRow) -> list[str]:
    steps = NONE if row.steps_left is None else str(row.steps_left)
    return [_code(row.name), _number(row.pr), steps, _text(row.last_result)]


def _red(row: RedRow) -> list[str]:
    since = NONE if row.since is None else f"build {row.since}"
    return [_code(row.step), since, _number(row.issue), _number(row.revert_pr)]


def _flaky(row: FlakyStep) -> list[str]:
    return [_code(row.step), str(row.retries), str(row.passed), str(row.failed)]


def _failure(row: FailureRow) -> list[str]:
    return [
        escape(_when(row.received_at)),
        _code(row.delivery_id),
        escape(f"{row.source} {row.event}"),
        _code(row.subject),
        str(row.attempts),
        f"<pre>{escape(row.error)}</pre>" if row.error else NONE,
    ]


def _age(days: float | None, behind: int | None) -> str:
    if days is None:
        # Nothing unrolled (behind 0) has no age; otherwise the age is not known yet.
        return NONE if behind == 0 else UNKNOWN
    whole = int(max(days, 0.0))
    if whole == 0:
        return escape(LESS_THAN_A_DAY)
    return "1 day" if whole == 1 else f"{whole} days"


def _sha(value: str | None) -> str:
    """A commit abbreviated (whole in its tooltip), a tag whole."""
    if not value:
        return UNKNOWN
    if _FULL_SHA.fullmatch(value):
        return f'<code title="{escape(value)}">{escape(value[:SHORT_SHA])}</code>'
    return _code(value)


_FULL_SHA = re.compile(r"[0-9a-f]{40}")


def _number(value: int | None) -> str:
    return NONE if value is None else f"#{value}"


def _text(value: str | None) -> str:
    return escape(value) if value else NONE


def _code(value: str) -> str:
    return f"<code>{escape(value)}</code>"


def _p(text: str) -> str:
    return f"<p>{escape(text)}</p>"


def _empty(text: str) -> str:
    return f'<p class="empty">{escape(text)}</p>'


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))
