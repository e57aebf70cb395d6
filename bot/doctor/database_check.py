"""The doctor's database checks: ``FOLLOWUP_BOT_DATABASE`` answers, holds the current schema
and takes a write (a probe document, deleted at once); and whether each repository's
dashboard is this deployment's to write (``bot.dashboard.ownership``).

Nothing is migrated or created here: a missing SQLite file is one ``serve`` makes.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import asyncpg

from bot.core.blocking import BlockingRunner
from bot.core.settings import Settings
from bot.dashboard.deployment import PROBE_PREFIX, known_ids
from bot.dashboard.issue import ADOPT_SETTING
from bot.dashboard.ownership import adoption_value, writer_shown
from bot.doctor import fixes
from bot.doctor.result import CheckResult, failed, ok, skipped
from bot.store.access import Access, StoreUnavailable, is_postgres, redacted
from bot.store.kinds import Kind
from bot.store.open import store_for
from bot.store.protocol import Store

CHECK_DATABASE = "database"
CHECK_INBOX = "inbox"
CHECK_DASHBOARD = "dashboard {repo}"

DETAIL_WRITABLE = "{database}: current schema, a write taken and undone"
DETAIL_NOT_CREATED = "{database} does not exist yet: serve creates it"
DETAIL_TIMED_OUT = "{database}: no answer within {seconds:g} s"
DETAIL_FAILED = "{database}: {error}"
DETAIL_NEEDS_DATABASE = "needs the database"
DETAIL_NO_DASHBOARD = "no dashboard recorded yet: the first reconcile tick writes one"
DETAIL_OURS = "issue #{issue}, written by this deployment ({deployment})"
DETAIL_FOREIGN = (
    "issue #{issue} was written by another deployment ({writer}), not by this one "
    "({deployment}): this one leaves it alone"
)
DETAIL_INBOX = "{queued} queued (oldest {age}), {running} running"
DETAIL_INBOX_EMPTY = "nothing queued, {running} running"
# A delivery queued this long means no worker takes work (none running, or all stuck):
# fifteen minutes is past every retry's backoff but one rate-limit wait.
INBOX_STALE_SECONDS = 15 * 60
# The store's own words for a database that answers but is not at the current schema.
SCHEMA_WORDS = ("schema", "not a followup-bot database")


async def check_database(settings: Settings, repositories: Sequence[str]) -> list[CheckResult]:
    """The database check, then one dashboard check per repository (skipped without it)."""
    database = redacted(settings.database)
    if not is_postgres(settings.database) and not await asyncio.to_thread(
        Path(settings.database).exists
    ):
        results = [skipped(CHECK_DATABASE, DETAIL_NOT_CREATED.format(database=database))]
        results.append(skipped(CHECK_INBOX, DETAIL_NOT_CREATED.format(database=database)))
        return results + _skipped_dashboards(repositories, DETAIL_NO_DASHBOARD)
    blocking = BlockingRunner(max_workers=1)
    store = store_for(settings.database, blocking, access=Access.WRITE)
    try:
        async with asyncio.timeout(settings.http_timeout):
            await store.open()
            await _probe(store)
            inbox = await _inbox(store)
            dashboards = [await _dashboard(store, repo, settings) for repo in repositories]
    except TimeoutError:
        detail = DETAIL_TIMED_OUT.format(database=database, seconds=settings.http_timeout)
        failure = failed(CHECK_DATABASE, detail, fixes.FIX_DATABASE_UNREACHABLE)
        return [failure, *_skipped_rest(repositories)]
    except (StoreUnavailable, OSError, sqlite3.Error, asyncpg.PostgresError) as exc:
        error = str(exc) or type(exc).__name__
        schema = isinstance(exc, StoreUnavailable) and any(w in error for w in SCHEMA_WORDS)
        fix = fixes.FIX_DATABASE_SCHEMA if schema else fixes.FIX_DATABASE_UNREACHABLE
        detail = DETAIL_FAILED.format(database=database, error=error.replace("\n", " "))
        failure = failed(CHECK_DATABASE, detail, fix)
        return [failure, *_skipped_rest(repositories)]
    finally:
        await store.close()
        blocking.close()
    return [ok(CHECK_DATABASE, DETAIL_WRITABLE.format(database=database)), inbox, *dashboards]


async def _inbox(store: Store) -> CheckResult:
    """The inbox's depth and oldest age (readiness leaves them out: a slow GitHub must not
    take every replica out of service at once, so an operator sees them here)."""
    stats = await store.inbox_stats()
    if stats.oldest_queued_at is None:
        return ok(CHECK_INBOX, DETAIL_INBOX_EMPTY.format(running=stats.running))
    age = max(0.0, time.time() - stats.oldest_queued_at)
    detail = DETAIL_INBOX.format(queued=stats.queued, age=_age(age), running=stats.running)
    if age > INBOX_STALE_SECONDS:
        return failed(CHECK_INBOX, detail, fixes.FIX_INBOX_STALE)
    return ok(CHECK_INBOX, detail)


def _age(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


async def _probe(store: Store) -> None:
    """One write the service would make, undone: the database takes this service's writes."""
    key = PROBE_PREFIX + uuid.uuid4().hex
    await store.put_state(Kind.DEPLOYMENT, key, {"created_at": time.time()})
    await store.delete_state(Kind.DEPLOYMENT, key)


async def _dashboard(store: Store, repo: str, settings: Settings) -> CheckResult:
    """What the service last found of ``repo``'s dashboard (read from its record)."""
    check = CHECK_DASHBOARD.format(repo=repo)
    record = await store.get_state(Kind.DASHBOARD, repo) or {}
    ids = sorted(await known_ids(store))
    deployment = ids[0] if len(ids) == 1 else ", ".join(ids) or "none yet"
    refused = record.get("refused")
    if isinstance(refused, dict):
        writer = refused.get("writer")
        writer = writer if isinstance(writer, str) else None
        if settings.adopt_dashboard != adoption_value(writer):
            detail = DETAIL_FOREIGN.format(
                issue=refused.get("issue"), writer=writer_shown(writer), deployment=deployment
            )
            fix = fixes.FIX_FOREIGN_DASHBOARD.format(
                setting=ADOPT_SETTING, value=adoption_value(writer)
            )
            return failed(check, detail, fix)
    if isinstance(record.get("issue"), int):
        return ok(check, DETAIL_OURS.format(issue=record["issue"], deployment=deployment))
    return ok(check, DETAIL_NO_DASHBOARD)


def _skipped_rest(repositories: Sequence[str]) -> list[CheckResult]:
    inbox = skipped(CHECK_INBOX, DETAIL_NEEDS_DATABASE)
    return [inbox, *_skipped_dashboards(repositories, DETAIL_NEEDS_DATABASE)]


def _skipped_dashboards(repositories: Sequence[str], detail: str) -> list[CheckResult]:
    return [skipped(CHECK_DASHBOARD.format(repo=repo), detail) for repo in repositories]
