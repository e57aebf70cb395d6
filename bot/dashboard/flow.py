"""The dashboard: one issue per repository, showing what the bot knows, edited only on change.

``collect`` reads everything from the store (no GitHub calls, so a reconcile
tick can render it for free), ``render`` (in ``dashboard_text``) makes the
markdown, and ``upsert_dashboard`` (in ``bot.dashboard.issue``) writes it: no
write at all when the issue already shows it.

Store documents the dashboard reads that other flows write:

* ``dashboard-pin`` per ``<repo>#<pin>`` (build it with ``pin_snapshot``):
  ``pinned`` (the sha the default branch pins), ``upstream_head`` (the head of
  the followed upstream branch), ``behind`` (upstream commits not in the pin),
  ``oldest_unrolled_at`` (epoch seconds of the oldest of those commits; None
  when ``behind`` is 0) and optionally ``pr_state`` (e.g. "open", "merged").
* ``dashboard-allowlist`` per repo (written by ``record_allowlist_evidence``):
  ``{pattern: {"evidence": "stale" | "unstable" | "not on this platform",
  "date": "YYYY-MM-DD" (UTC), "owner": pin name or None}}``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from bot.allowlist.evidence_record import owner_of, record_allowlist_evidence
from bot.config.models import PinConfig, RepoConfig
from bot.dashboard.issue import Upsert, upsert_dashboard
from bot.dashboard.red_text import MainSection, red_rows
from bot.dashboard.routing_text import MigrationRow, RoutingSection
from bot.dashboard.text import (
    DASHBOARD_TITLE,
    FOLLOWS_BRANCH,
    FOLLOWS_TAGS,
    MARKER,
    DashboardData,
    EntryRow,
    PinRow,
    RetryRow,
    render,
    utc_day,
)
from bot.images.model import ImageCheck
from bot.pins.snapshot import pin_snapshot
from bot.pins.state import Outcome, PinState
from bot.store.kinds import Kind, migration_key
from bot.store.protocol import Store

__all__ = [
    "DASHBOARD_TITLE",
    "MARKER",
    "DashboardData",
    "EntryRow",
    "PinRow",
    "RetryRow",
    "Upsert",
    "collect",
    "pin_snapshot",
    "record_allowlist_evidence",
    "render",
    "upsert_dashboard",
]

DAY = 86400.0

# What the bump flow's last outcome says about its PR, when no `pr_state` was recorded.
PR_STATE_FROM_OUTCOME = {
    Outcome.CREATED.value: "open",
    Outcome.UPDATED.value: "open",
    Outcome.UNCHANGED.value: "open",
    Outcome.HUMAN_OWNED.value: "open, human commits",
    Outcome.CLOSED.value: "closed, pin current",
    Outcome.SKIPPED.value: "closed by a human",
}


# --- what other flows record ------------------------------------------------------


# --- collect ----------------------------------------------------------------------


async def collect(
    store: Store, repo: str, config: RepoConfig | None, *, now: float
) -> DashboardData:
    """Everything the dashboard shows about ``repo``, from the store alone."""
    config_doc, allow_doc, bump_docs, pin_docs, jobs, routing_doc = await asyncio.gather(
        store.get_state(Kind.CONFIG, repo),
        store.get_state(Kind.DASHBOARD_ALLOWLIST, repo),
        store.list_state(Kind.BUMP),
        store.list_state(Kind.DASHBOARD_PIN),
        store.list_state(Kind.RETRY_JOB),
        store.get_state(Kind.DASHBOARD_ROUTING, repo),
    )
    signal_docs, image_doc = await asyncio.gather(
        store.list_state(Kind.MAIN_SIGNAL), store.get_state(Kind.IMAGE_CHECK, repo)
    )
    errors = str((config_doc or {}).get("error") or "")
    return DashboardData(
        repo=repo,
        config_errors=tuple(line for line in errors.splitlines() if line.strip()),
        pins=_pins(repo, config, dict(bump_docs), dict(pin_docs), now),
        entries=_entries(allow_doc or {}, config),
        retries=_retries(repo, jobs),
        routing=await _routing(store, repo, config, routing_doc),
        main=_main(repo, config, dict(signal_docs), image_doc),
    )


def _main(
    repo: str,
    config: RepoConfig | None,
    signal_docs: Mapping[str, Mapping[str, Any]],
    image_doc: Mapping[str, Any] | None,
) -> MainSection | None:
    """Broken steps and the last image check (None: main is not watched, nothing checked)."""
    prefix = f"{repo}#red/"
    docs = [
        (key.removeprefix(prefix), dict(doc))
        for key, doc in signal_docs.items()
        if key.startswith(prefix)
    ]
    if (config is None or config.main_red is None) and not docs and image_doc is None:
        return None
    images = ImageCheck.load(image_doc) if image_doc else None
    return MainSection(red_rows(docs), images)


async def _routing(
    store: Store, repo: str, config: RepoConfig | None, doc: Mapping[str, Any] | None
) -> RoutingSection | None:
    """Main's routing as last recorded, with each migration's PR (None: nothing recorded)."""
    if doc is None:
        return None
    names = [migration.name for migration in config.migrations] if config else []
    states = await asyncio.gather(
        *(store.get_state(Kind.MIGRATION, migration_key(repo, name)) for name in names)
    )
    migrations = tuple(
        MigrationRow(
            name,
            _int((state or {}).get("pr")),
            _int((state or {}).get("steps_left")),
            _text((state or {}).get("last_result")),
        )
        for name, state in zip(names, states, strict=True)
    )
    queues = doc.get("queues")
    return RoutingSection(
        base=str(doc.get("base") or ""),
        queues={str(q): int(n) for q, n in queues.items()} if isinstance(queues, dict) else {},
        problems=tuple(str(p) for p in doc.get("problems") or ()),
        problem_count=_int(doc.get("problem_count")) or 0,
        migrations=migrations,
    )


def _pins(
    repo: str,
    config: RepoConfig | None,
    bump_docs: Mapping[str, Mapping[str, Any]],
    pin_docs: Mapping[str, Mapping[str, Any]],
    now: float,
) -> tuple[PinRow, ...]:
    prefix = f"{repo}#"
    follows: dict[str, str] = {}
    if config is not None:
        paused = {pin.name: pin.paused for pin in config.pins}
        follows = {pin.name: _follows(pin) for pin in config.pins}
    else:
        # No usable config: show what the bot last knew rather than nothing.
        names = {
            key.removeprefix(prefix) for key in (*bump_docs, *pin_docs) if key.startswith(prefix)
        }
        paused = {
            name: (bump_docs.get(prefix + name) or {}).get("last_result") == Outcome.PAUSED.value
            for name in names
        }
    rows = []
    for name, is_paused in sorted(paused.items()):
        state = PinState.load(bump_docs.get(prefix + name))
        snap = pin_docs.get(prefix + name) or {}
        oldest = _number(snap.get("oldest_unrolled_at"))
        rows.append(
            PinRow(
                name=name,
                pinned=_text(snap.get("pinned")),
                upstream_head=_text(snap.get("upstream_head")),
                behind=_int(snap.get("behind")),
                oldest_unrolled_age_days=None if oldest is None else (now - oldest) / DAY,
                pr=state.pr,
                pr_state=_text(snap.get("pr_state"))
                or PR_STATE_FROM_OUTCOME.get(state.last_result),
                paused=is_paused,
                last_failure=state.last_failure,
                follows=follows.get(name),
                companions=_companion_cells(state),
            )
        )
    return tuple(rows)


def _follows(pin: PinConfig) -> str:
    if pin.track == "tags":
        return FOLLOWS_TAGS.format(tags=pin.tags)
    return FOLLOWS_BRANCH.format(branch=pin.branch)


def _companion_cells(state: PinState) -> tuple[tuple[str, str | None], ...]:
    """What the last sync found in the pin's companion files (``companions`` of its state)."""
    found = state.extra.get("companions")
    if not isinstance(found, list):
        return ()
    return tuple(
        (str(item.get("file")), _text(item.get("problem")))
        for item in found
        if isinstance(item, dict)
    )


def _entries(doc: Mapping[str, Any], config: RepoConfig | None) -> tuple[EntryRow, ...]:
    rows = []
    for pattern, value in sorted(doc.items()):
        entry = value if isinstance(value, Mapping) else {}
        date = entry.get("date")
        rows.append(
            EntryRow(
                pattern=pattern,
                owner_pin=_text(entry.get("owner")) or owner_of(pattern, config),
                evidence=_text(entry.get("evidence")),
                date=utc_day(date) if isinstance(date, int | float) else _text(date),
            )
        )
    return tuple(rows)


def _retries(repo: str, jobs: Iterable[tuple[str, Mapping[str, Any]]]) -> tuple[RetryRow, ...]:
    rows = [
        RetryRow(
            job_id=job_id,
            pr=_int(doc.get("pr")),
            step=str(doc.get("step_key") or doc.get("name") or "?"),
            job_class=_text(doc.get("class")),
            rule=_text(doc.get("rule")),
            outcome=_text(doc.get("outcome")),
            requested_by=_text(doc.get("requested_by")),
            reason=_text(doc.get("reason")),
            at=_number(doc.get("at")) or 0.0,
        )
        for job_id, doc in jobs
        if doc.get("repo") == repo
    ]
    return tuple(sorted(rows, key=lambda row: (-row.at, row.job_id)))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
