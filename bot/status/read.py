"""Gathering the status page's data from the store alone (no GitHub or Buildkite call, so
the page costs nothing upstream however often it is loaded).

Pins, allowlist entries, red steps and the retry trail come from the dashboard's
``collect``, the same reader the dashboard issue uses. No repository config is passed:
reading it would take a GitHub call, and ``collect`` then shows what the bot last
recorded. Migration PRs are read here because the dashboard finds them by the config's
migration names, which the page does not have.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.dashboard.flow import collect
from bot.dashboard.routing_text import MigrationRow
from bot.dashboard.text import RetryRow
from bot.retry.report import flaky_steps
from bot.routing_check.migrate_pr import MigrationState, Outcome
from bot.status.model import FailureRow, RepoStatus, StatusData
from bot.store.kinds import Kind, migration_key
from bot.store.protocol import DeliveryStatus, Store

FAILURES_SHOWN = 20
FLAKIEST_SHOWN = 10
# A failure's reason can hold a whole traceback; the page shows its start.
ERROR_SHOWN = 2000
# Last results after which the migration's PR is no longer open.
PR_GONE = frozenset({Outcome.CLOSED.value, Outcome.SKIPPED.value, Outcome.NOTHING_TO_MOVE.value})


async def read_status(store: Store, repositories: Sequence[str], *, now: float) -> StatusData:
    """Every configured repository's recorded state, and the last failed deliveries."""
    migration_docs, failed = await asyncio.gather(
        store.list_state(Kind.MIGRATION),
        store.list_deliveries(DeliveryStatus.FAILED, limit=FAILURES_SHOWN),
    )
    repos = []
    for repo in repositories:
        data = await collect(store, repo, None, now=now)
        repos.append(
            RepoStatus(
                repo=repo,
                config_errors=data.config_errors,
                pins=data.pins,
                entries=data.entries,
                migrations=_open_migrations(repo, migration_docs),
                red=data.main.red if data.main is not None else (),
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
    return StatusData(generated_at=now, repos=tuple(repos), failures=failures)


def _open_migrations(
    repo: str, docs: Sequence[tuple[str, dict[str, object]]]
) -> tuple[MigrationRow, ...]:
    prefix = migration_key(repo, "")
    rows = []
    for key, doc in docs:
        if not key.startswith(prefix):
            continue
        state = MigrationState.load(doc)
        if state.pr is None or state.closed_by_bot == state.pr or state.last_result in PR_GONE:
            continue
        rows.append(
            MigrationRow(key.removeprefix(prefix), state.pr, state.steps_left, state.last_result)
        )
    return tuple(rows)


def _record(row: RetryRow) -> dict[str, object]:
    # The raw values: the page escapes them itself (``as_record`` is markdown-neutralised).
    return {"step_key": row.step, "outcome": row.outcome, "rule": row.rule, "class": row.job_class}
