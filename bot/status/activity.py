"""The bot's recent activity, pure: what its state documents say it last did, newest first.

Every document the flows write when they act carries the time of its last write
(``Store.recent_state``): a bump PR opened, updated or closed, a PR merged, a comment
posted, a job retried, a step found red on main, a migration or stale-entries PR, the
dashboard edited. Each document shows its latest action only: a bump PR updated
twice is one row, at the second time. Documents that record no action (a sync that
changed nothing) give no row.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from bot.status import links
from bot.status.model import ActivityRow, Linked
from bot.store.kinds import Kind
from bot.store.protocol import StateRecord

KINDS = (
    Kind.BUMP,
    Kind.LANDING,
    Kind.POSTED_COMMENT,
    Kind.RETRY_JOB,
    Kind.MAIN_SIGNAL,
    Kind.MIGRATION,
    Kind.ALLOWLIST_STALE,
    Kind.DASHBOARD,
)
BUMP_ACTIONS = {
    "created": "bump PR opened for {pin}",
    "updated": "bump PR updated for {pin}",
    "closed": "bump PR closed for {pin} (pin current)",
    "failed": "bump of {pin} failed: {reason}",
}
MERGED = "merged #{number}"
AUTO_MERGE = "auto-merge enabled on #{number}"
LANDING_STOPPED = "landing of #{number} left to humans"
APPROVED = "landing #{number}, approved by @{login}"
COMMENTED = "commented on #{number} ({what})"
COMMENTING = "commenting on #{number} ({what}): not confirmed yet"
RETRIED = "retried {step} on #{number}: {outcome}"
RETRY_RUNNING = "running"
RED = "{step} red on main since build {since}"
GREEN_AGAIN = "{step} green again on main"
MIGRATION = "migration {name}: {result}"
STALE_PR = "stale allowlist entries PR"
DASHBOARD = "dashboard issue edited"
COMMENT = "comment"
_MARKER_NAME = re.compile(r"followup-bot:([a-z0-9-]+)")


def activity(
    records: Iterable[StateRecord], repositories: Collection[str], *, limit: int
) -> tuple[ActivityRow, ...]:
    """At most ``limit`` rows of the served repositories, in the records' order."""
    rows: list[ActivityRow] = []
    for record in records:
        row = describe(record)
        if row is not None and row.repo in repositories:
            rows.append(row)
        if len(rows) == limit:
            break
    return tuple(rows)


def describe(record: StateRecord) -> ActivityRow | None:
    """The action ``record`` says was taken last, if any."""
    doc, at = record.value, record.updated_at
    if record.kind == Kind.RETRY_JOB:
        return _retry(record.key, doc, at)
    repo, _, rest = record.key.partition("#")
    if record.kind == Kind.BUMP:
        return _bump(repo, rest, doc, at)
    if record.kind == Kind.LANDING:
        return _landing(repo, rest, doc, at)
    if record.kind == Kind.POSTED_COMMENT:
        return _comment(repo, rest, doc, at)
    if record.kind == Kind.MAIN_SIGNAL:
        return _signal(repo, rest, doc, at)
    if record.kind == Kind.MIGRATION:
        return _migration(repo, rest, doc, at)
    if record.kind == Kind.ALLOWLIST_STALE:
        number = _int(doc.get("pr"))
        return None if number is None else ActivityRow(at, repo, STALE_PR, (_pull(repo, number),))
    if record.kind == Kind.DASHBOARD:
        number = _int(doc.get("issue"))
        return None if number is None else ActivityRow(at, repo, DASHBOARD, (_issue(repo, number),))
    return None


def _bump(repo: str, pin: str, doc: Mapping[str, Any], at: float) -> ActivityRow | None:
    template = BUMP_ACTIONS.get(str(doc.get("last_result")))
    if template is None:
        return None
    what = template.format(pin=pin, reason=doc.get("last_failure") or "?")
    number = _int(doc.get("pr"))
    shown = () if number is None or doc.get("last_result") == "failed" else (_pull(repo, number),)
    return ActivityRow(at, repo, what, shown)


def _landing(repo: str, key: str, doc: Mapping[str, Any], at: float) -> ActivityRow | None:
    if not key.isdigit():
        return None
    number = int(key)
    pr = _pull(repo, number)
    merged = doc.get("merged_sha")
    if isinstance(merged, str) and merged:
        sha = Linked(merged[:7], links.commit(repo, merged))
        return ActivityRow(at, repo, MERGED.format(number=number), (pr, sha))
    if doc.get("stopped_for"):
        return ActivityRow(at, repo, LANDING_STOPPED.format(number=number), (pr,))
    if doc.get("auto_merge_for"):
        return ActivityRow(at, repo, AUTO_MERGE.format(number=number), (pr,))
    if doc.get("approved_by"):
        what = APPROVED.format(number=number, login=doc["approved_by"])
        return ActivityRow(at, repo, what, (pr,))
    return None


def _comment(repo: str, rest: str, doc: Mapping[str, Any], at: float) -> ActivityRow | None:
    number_text, _, marker = rest.partition("#")
    if not number_text.isdigit():
        return None
    number = int(number_text)
    found = _MARKER_NAME.search(marker)
    what = found.group(1) if found else COMMENT
    if doc.get("pending"):
        return ActivityRow(at, repo, COMMENTING.format(number=number, what=what), ())
    shown = Linked(f"#{number}", links.comment(repo, number, _int(doc.get("id"))))
    return ActivityRow(at, repo, COMMENTED.format(number=number, what=what), (shown,))


def _retry(job_id: str, doc: Mapping[str, Any], at: float) -> ActivityRow | None:
    repo, number = str(doc.get("repo") or ""), _int(doc.get("pr"))
    if not repo or number is None:
        return None
    step = str(doc.get("step_key") or doc.get("name") or "?")
    outcome = str(doc.get("outcome") or RETRY_RUNNING)
    build_key = str(doc.get("build") or "")
    build_url = links.build_key(build_key)
    shown = [_pull(repo, number)]
    if build_url is not None:
        shown.append(Linked(f"build {build_key.rsplit('/', 1)[-1]}", build_url))
        shown.append(Linked("job", links.job(build_url, job_id)))
    what = RETRIED.format(step=step, number=number, outcome=outcome)
    return ActivityRow(at, repo, what, tuple(shown))


def _signal(repo: str, rest: str, doc: Mapping[str, Any], at: float) -> ActivityRow | None:
    issue, revert = _int(doc.get("issue")), _int(doc.get("revert_pr"))
    if issue is None and revert is None:
        return None
    step = rest.removeprefix("red/")
    shown = tuple(
        link
        for link in (
            None if issue is None else _issue(repo, issue),
            None if revert is None else _pull(repo, revert),
        )
        if link is not None
    )
    if doc.get("closed") or doc.get("state") == "green":
        return ActivityRow(at, repo, GREEN_AGAIN.format(step=step), shown)
    since = doc.get("since")
    return ActivityRow(at, repo, RED.format(step=step, since=since if since else "?"), shown)


def _migration(repo: str, rest: str, doc: Mapping[str, Any], at: float) -> ActivityRow | None:
    number = _int(doc.get("pr"))
    result = doc.get("last_result")
    if number is None or not result:
        return None
    what = MIGRATION.format(name=rest.removeprefix("migrate/"), result=result)
    return ActivityRow(at, repo, what, (_pull(repo, number),))


def _pull(repo: str, number: int) -> Linked:
    return Linked(f"#{number}", links.pull(repo, number))


def _issue(repo: str, number: int) -> Linked:
    return Linked(f"#{number}", links.issue(repo, number))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
