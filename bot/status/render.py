"""The status page's HTML, pure: plain data in, one self-contained document out.

Server-rendered and readable without JavaScript (there is none). Every value is
escaped: step names, errors and patterns come from webhooks, logs and comments.
Every PR, issue, commit, build and job is a link when its address is known
(``bot.status.links``). The service section and the recent activity are in
``render_service``; the pieces every page shares in ``render_parts``.
"""

from __future__ import annotations

import re
from html import escape

from bot.status.model import (
    EntryStatus,
    FailureRow,
    FlakyStep,
    Linked,
    MigrationStatus,
    PinStatus,
    RedStatus,
    RepoStatus,
    StatusData,
)
from bot.status.render_parts import (
    NONE,
    UNKNOWN,
    badge,
    code,
    document,
    empty_note,
    link,
    paragraph,
    table,
    text,
    when,
)
from bot.status.render_service import (
    HEADING_ACTIVITY,
    HEADING_SERVICE,
    render_activity,
    render_service,
)

TITLE = "followup-bot status"
GENERATED = "Recorded state as of {when}. The page reads the bot's store only."
HEADING_CONFIG_ERRORS = "Configuration errors"
HEADING_PINS = "Pins"
HEADING_ALLOWLIST = "Allowlist entries"
HEADING_MIGRATIONS = "Open migration PRs"
HEADING_RED = "Red steps on main"
HEADING_FLAKIEST = "Flakiest steps"
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
LESS_THAN_A_DAY = "< 1 day"
SHORT_SHA = 7

PIN_COLUMNS = (
    "pin",
    "mode",
    "pinned",
    "upstream head",
    "behind",
    "oldest unrolled commit",
    "bump PR",
    "PR state",
    "last failure",
)
ENTRY_COLUMNS = ("entry", "owning pin", "last evidence", "date", "pruned by")
MIGRATION_COLUMNS = ("migration", "PR", "steps left", "last result")
RED_COLUMNS = ("step", "red since", "issue", "partial revert")
FLAKY_COLUMNS = ("step", "retries", "passed on retry", "failed again")
FAILURE_COLUMNS = ("received", "delivery", "event", "subject", "attempts", "reason")


def render_page(data: StatusData) -> str:
    """The whole page: the service, the recent activity, one section per repository, then
    the service's failures."""
    body = [
        f"<h1>{escape(TITLE)}</h1>",
        paragraph(GENERATED.format(when=when(data.generated_at))),
        _nav(data),
    ]
    if data.service is not None:
        body.append(render_service(data.service, now=data.generated_at))
    body.append(render_activity(data.activity))
    if not data.repos:
        body.append(empty_note(NO_REPOSITORIES))
    body += [_repo(status, index) for index, status in enumerate(data.repos)]
    body.append(
        '<section id="failures">'
        f"<h2>{escape(HEADING_FAILURES)}</h2>"
        + table("failures", FAILURE_COLUMNS, data.failures, _failure, NO_FAILURES)
        + "</section>"
    )
    return document(TITLE, body)


def _nav(data: StatusData) -> str:
    targets = [("service", HEADING_SERVICE)] if data.service is not None else []
    targets.append(("activity", HEADING_ACTIVITY))
    targets += [(f"repo-{index}", status.repo) for index, status in enumerate(data.repos)]
    targets.append(("failures", HEADING_FAILURES))
    return (
        "<nav>"
        + "".join(f'<a href="#{anchor}">{escape(name)}</a>' for anchor, name in targets)
        + "</nav>"
    )


def _repo(status: RepoStatus, index: int) -> str:
    parts = [f'<section class="repo" id="repo-{index}">', f"<h2>{escape(status.repo)}</h2>"]
    if status.config_errors:
        errors = escape("\n".join(status.config_errors))
        parts.append(f"<h3>{escape(HEADING_CONFIG_ERRORS)}</h3>")
        parts.append(f'<pre class="errors">{errors}</pre>')
    sections: list[tuple[str, str]] = [
        (HEADING_PINS, table("pins", PIN_COLUMNS, status.pins, _pin, NO_PINS)),
        (HEADING_ALLOWLIST, table("entries", ENTRY_COLUMNS, status.entries, _entry, NO_ENTRIES)),
        (
            HEADING_MIGRATIONS,
            table("migrations", MIGRATION_COLUMNS, status.migrations, _migration, NO_MIGRATIONS),
        ),
        (HEADING_RED, table("red", RED_COLUMNS, status.red, _red, NO_RED)),
        (HEADING_FLAKIEST, table("flakiest", FLAKY_COLUMNS, status.flakiest, _flaky, NO_FLAKY)),
    ]
    for heading, content in sections:
        parts += [f"<h3>{escape(heading)}</h3>", content]
    parts.append("</section>")
    return "\n".join(parts)


def _pin(pin: PinStatus) -> list[str]:
    row = pin.row
    return [
        code(row.name),
        badge(pin.mode),
        _sha(pin.pinned),
        _sha(pin.upstream_head),
        UNKNOWN if row.behind is None else str(row.behind),
        _age(row.oldest_unrolled_age_days, row.behind),
        link(pin.pr),
        badge(pin.pr_state),
        text(row.last_failure),
    ]


def _entry(entry: EntryStatus) -> list[str]:
    row = entry.row
    return [
        code(row.pattern),
        text(row.owner_pin),
        text(row.evidence),
        text(row.date),
        link(entry.prune),
    ]


def _migration(migration: MigrationStatus) -> list[str]:
    row = migration.row
    steps = NONE if row.steps_left is None else str(row.steps_left)
    return [code(row.name), link(migration.pr), steps, text(row.last_result)]


def _red(red: RedStatus) -> list[str]:
    return [code(red.row.step), link(red.since), link(red.issue), link(red.revert_pr)]


def _flaky(row: FlakyStep) -> list[str]:
    return [code(row.step), str(row.retries), str(row.passed), str(row.failed)]


def _failure(row: FailureRow) -> list[str]:
    return [
        escape(when(row.received_at)),
        code(row.delivery_id),
        escape(f"{row.source} {row.event}"),
        code(row.subject),
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


def _sha(value: Linked | None) -> str:
    """A commit abbreviated (whole in its tooltip), a tag whole; linked when its upstream
    is known."""
    if value is None or not value.text:
        return UNKNOWN
    if not _FULL_SHA.fullmatch(value.text):
        return link(value, code=True)
    short = f'<code title="{escape(value.text)}">{escape(value.text[:SHORT_SHA])}</code>'
    if value.href is None:
        return short
    return f'<a href="{escape(value.href, quote=True)}" rel="noreferrer">{short}</a>'


_FULL_SHA = re.compile(r"[0-9a-f]{40}")
