"""Gathering the status page's data from the store alone (no GitHub or Buildkite call, so
the page costs nothing upstream however often it is loaded).

Pins, allowlist entries, red steps and the retry trail come from the dashboard's
``collect``, the same reader the dashboard issue uses. The repository's config is not
read for the page (that takes a GitHub call): the one this replica last read, if it
still holds it, names each pin's upstream (for commit links) and the Buildkite
organization (for build links); without it ``collect`` shows what the bot last
recorded. Migration PRs are read here because the dashboard finds them by the config's
migration names, which the page may not have.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.config.models import RepoConfig
from bot.context.config_load import CACHE_KIND
from bot.context.services import Services
from bot.dashboard.flow import collect
from bot.dashboard.text import RetryRow
from bot.pins.state import PinState
from bot.retry.report import flaky_steps
from bot.routing_check.migrate_pr import MigrationState, Outcome
from bot.status import links
from bot.status.activity import KINDS as ACTIVITY_KINDS
from bot.status.activity import activity
from bot.status.model import (
    EntryRow,
    EntryStatus,
    FailureRow,
    Linked,
    MigrationRow,
    MigrationStatus,
    PinStatus,
    RedRow,
    RedStatus,
    RepoStatus,
    StatusData,
)
from bot.status.pins import MERGED, OPEN, pin_status
from bot.status.service import rate_limit_headroom, read_service
from bot.store.kinds import Kind, migration_key, pin_key
from bot.store.protocol import DeliveryStatus, Store

FAILURES_SHOWN = 20
FLAKIEST_SHOWN = 10
ACTIVITY_SHOWN = 25
# Documents read for the activity: most record an action, a bump's sync often none.
ACTIVITY_READ = 200
# A failure's reason can hold a whole traceback; the page shows its start.
ERROR_SHOWN = 2000
# Last results after which the migration's PR is no longer open.
PR_GONE = frozenset({Outcome.CLOSED.value, Outcome.SKIPPED.value, Outcome.NOTHING_TO_MOVE.value})


@dataclass(frozen=True)
class StatusSources:
    """What the page reads: the store, and what this replica knows besides."""

    store: Store
    configs: Mapping[str, RepoConfig] = field(default_factory=dict)  # by repository
    rate_limits: Mapping[str, float] = field(default_factory=dict)  # requests left, by service


def sources_of(services: Services) -> StatusSources:
    return StatusSources(
        store=services.store,
        configs=known_configs(services.cache),
        rate_limits=rate_limit_headroom(services.metrics),
    )


def known_configs(cache: Mapping[Any, Any]) -> dict[str, RepoConfig]:
    """The configs this replica read lately (``bot.context.config_load`` keeps them by
    main's head)."""
    found: dict[str, RepoConfig] = {}
    for key in list(cache.keys()):
        value = cache.get(key)
        known = isinstance(key, tuple) and len(key) == 3 and key[0] == CACHE_KIND
        if known and isinstance(value, RepoConfig):
            found[str(key[1])] = value
    return found


async def read_status(
    sources: StatusSources, repositories: Sequence[str], *, now: float
) -> StatusData:
    """Every configured repository's recorded state, the service, the recent activity and
    the last failed deliveries."""
    store = sources.store
    migration_docs, failed, service, recent = await asyncio.gather(
        store.list_state(Kind.MIGRATION),
        store.list_deliveries(DeliveryStatus.FAILED, limit=FAILURES_SHOWN),
        read_service(store, rate_limits=sources.rate_limits),
        store.recent_state(ACTIVITY_KINDS, ACTIVITY_READ),
    )
    bumps, pauses, cooldowns, landings = await asyncio.gather(
        store.list_state(Kind.BUMP),
        store.list_state(Kind.PAUSE),
        store.list_state(Kind.PIN_COOLDOWN),
        store.list_state(Kind.LANDING),
    )
    docs = _PinDocs(dict(bumps), dict(pauses), dict(cooldowns), _merged(landings))
    repos = []
    for repo in repositories:
        config = sources.configs.get(repo)
        data = await collect(store, repo, config, now=now)
        pins = tuple(_pin(repo, row, docs, config) for row in data.pins)
        org = config.buildkite.organization if config and config.buildkite else None
        repos.append(
            RepoStatus(
                repo=repo,
                config_errors=data.config_errors,
                pins=pins,
                entries=_entries(repo, data.entries, pins, docs),
                migrations=_open_migrations(repo, migration_docs),
                red=tuple(
                    _red(repo, row, org) for row in (data.main.red if data.main is not None else ())
                ),
                flakiest=tuple(flaky_steps(map(_record, data.retries), top=FLAKIEST_SHOWN)),
            )
        )
    failures = tuple(
        FailureRow(
            delivery_id=record.delivery.delivery_id,
            source=record.delivery.source,
            event=record.delivery.event,
            subject=record.delivery.subject,
            received_at=record.delivery.received_at,
            attempts=record.delivery.attempts,
            error=(record.last_error or "")[:ERROR_SHOWN],
        )
        for record in failed
    )
    return StatusData(
        generated_at=now,
        repos=tuple(repos),
        failures=failures,
        service=service,
        activity=activity(recent, frozenset(repositories), limit=ACTIVITY_SHOWN),
    )


@dataclass(frozen=True)
class _PinDocs:
    bumps: dict[str, dict[str, Any]]
    pauses: dict[str, dict[str, Any]]
    cooldowns: dict[str, dict[str, Any]]
    merged: dict[str, frozenset[int]]  # repo → PRs whose landing recorded a merge


def _merged(landings: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, frozenset[int]]:
    found: dict[str, set[int]] = {}
    for key, doc in landings:
        repo, _, number = key.rpartition("#")
        if number.isdigit() and doc.get("merged_sha"):
            found.setdefault(repo, set()).add(int(number))
    return {repo: frozenset(numbers) for repo, numbers in found.items()}


def _pin(repo: str, row: Any, docs: _PinDocs, config: RepoConfig | None) -> PinStatus:
    key = pin_key(repo, row.name)
    landed = (docs.cooldowns.get(key) or {}).get("pr")
    return pin_status(
        repo,
        row,
        docs.bumps.get(key),
        paused=key in docs.pauses,
        landed_pr=landed if isinstance(landed, int) else None,
        merged_prs=docs.merged.get(repo, frozenset()),
        config=config.pin(row.name) if config is not None else None,
    )


def _entries(
    repo: str, rows: Sequence[EntryRow], pins: Sequence[PinStatus], docs: _PinDocs
) -> tuple[EntryStatus, ...]:
    """Entries a merged bump pruned are gone from the file: left out. One an open bump
    prunes links to its PR."""
    pruned: set[str] = set()
    pruning: dict[str, Linked] = {}
    for pin in pins:
        prunes = PinState.load(docs.bumps.get(pin_key(repo, pin.row.name))).prunes
        if pin.pr_state == MERGED:
            pruned.update(prunes)
        elif pin.pr_state == OPEN and pin.pr is not None:
            pruning.update(dict.fromkeys(prunes, pin.pr))
    return tuple(
        EntryStatus(row, pruning.get(row.pattern)) for row in rows if row.pattern not in pruned
    )


def _red(repo: str, row: RedRow, org: str | None) -> RedStatus:
    pipeline = row.step.split("/", 1)[0]
    since = None
    if row.since is not None:
        since = Linked(f"build {row.since}", links.build(org, pipeline, row.since))
    return RedStatus(
        row=row,
        since=since,
        issue=None if row.issue is None else Linked(f"#{row.issue}", links.issue(repo, row.issue)),
        revert_pr=None
        if row.revert_pr is None
        else Linked(f"#{row.revert_pr}", links.pull(repo, row.revert_pr)),
    )


def _open_migrations(
    repo: str, docs: Sequence[tuple[str, dict[str, object]]]
) -> tuple[MigrationStatus, ...]:
    prefix = migration_key(repo, "")
    rows = []
    for key, doc in docs:
        if not key.startswith(prefix):
            continue
        state = MigrationState.load(doc)
        if state.pr is None or state.closed_by_bot == state.pr or state.last_result in PR_GONE:
            continue
        row = MigrationRow(key.removeprefix(prefix), state.pr, state.steps_left, state.last_result)
        rows.append(MigrationStatus(row, Linked(f"#{state.pr}", links.pull(repo, state.pr))))
    return tuple(rows)


def _record(row: RetryRow) -> dict[str, object]:
    # The raw values: the page escapes them itself (``as_record`` is markdown-neutralised).
    return {"step_key": row.step, "outcome": row.outcome, "rule": row.rule, "class": row.job_class}
