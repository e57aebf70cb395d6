"""``followup-bot doctor``'s database and dashboard checks, on SQLite and PostgreSQL."""

from __future__ import annotations

import socket
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bot.core.blocking import BlockingRunner
from bot.dashboard.issue import ADOPT_SETTING
from bot.dashboard.ownership import written_by
from bot.doctor import fixes
from bot.doctor.database_check import (
    CHECK_DASHBOARD,
    CHECK_DATABASE,
    CHECK_INBOX,
    DETAIL_INBOX,
    DETAIL_INBOX_EMPTY,
    INBOX_STALE_SECONDS,
    check_database,
)
from bot.doctor.result import FAIL, OK, SKIP, CheckResult
from bot.doctor.run import exit_code, run_checks
from bot.service.reconcile import enqueue_tick
from bot.store.kinds import Kind
from bot.store.open import migrate_database, store_for
from bot.store.protocol import Delivery
from sandbox.harness import Harness, start_bot
from sandbox.vllm_shapes import DOWNSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_dashboard import dashboards, tick

DASHBOARD = CHECK_DASHBOARD.format(repo=DOWNSTREAM)


def by_check(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.check: result for result in results}


def closed_port() -> int:
    with socket.socket() as probe:  # a loopback port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_the_service_database_passes_and_the_dashboard_is_its_own(
    ci_env: Harness,
) -> None:
    seed(ci_env)
    await ci_env.start()
    await tick(ci_env, 1000.0)
    [dashboard] = dashboards(ci_env)
    results = await run_checks(ci_env.settings)
    checks = by_check(results)
    assert checks[CHECK_DATABASE].status == OK, checks[CHECK_DATABASE]
    assert checks[DASHBOARD].status == OK
    assert f"#{dashboard['number']}" in checks[DASHBOARD].detail
    assert str(written_by(dashboard["body"])) in checks[DASHBOARD].detail
    assert exit_code(results) == 0
    # The probe left nothing behind.
    ids = await ci_env.running.services.store.list_state(Kind.DEPLOYMENT)
    assert [key for key, _ in ids] == [written_by(dashboard["body"])]


async def test_an_unreachable_postgresql_url_fails_with_the_fix(ci_env: Harness) -> None:
    url = f"postgresql://followup:secret-pw@127.0.0.1:{closed_port()}/followup"
    results = await run_checks(replace(ci_env.settings, database=url))
    database = by_check(results)[CHECK_DATABASE]
    assert database.status == FAIL
    assert database.fix == fixes.FIX_DATABASE_UNREACHABLE
    assert "secret-pw" not in database.detail
    assert by_check(results)[DASHBOARD].status == SKIP
    assert exit_code(results) == 1


async def test_postgresql_unmigrated_then_migrated(ci_env: Harness, postgres_url: str) -> None:
    settings = replace(ci_env.settings, database=postgres_url)
    [database, _, _] = await check_database(settings, (DOWNSTREAM,))
    assert (database.status, database.fix) == (FAIL, fixes.FIX_DATABASE_SCHEMA)
    blocking = BlockingRunner(max_workers=1)
    try:
        await migrate_database(postgres_url, blocking)
    finally:
        blocking.close()
    [database, inbox, dashboard] = await check_database(settings, (DOWNSTREAM,))
    assert database.status == OK, database
    assert (inbox.status, inbox.detail) == (OK, DETAIL_INBOX_EMPTY.format(running=0))
    assert dashboard.status == OK


async def test_a_sqlite_file_that_is_not_the_bots(ci_env: Harness, tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    other.write_bytes(b"not a database at all, just bytes" * 10)
    [database, inbox] = await check_database(replace(ci_env.settings, database=str(other)), ())
    assert database.status == FAIL
    assert inbox.status == SKIP


async def test_a_database_not_created_yet_is_no_failure(ci_env: Harness, tmp_path: Path) -> None:
    settings = replace(ci_env.settings, database=str(tmp_path / "later" / "bot.sqlite3"))
    [database, inbox] = await check_database(settings, ())
    assert (database.status, inbox.status) == (SKIP, SKIP)
    assert not (tmp_path / "later").exists()


async def test_a_second_deployment_is_told_whose_dashboard_it_is(
    ci_env: Harness, tmp_path: Path
) -> None:
    seed(ci_env)
    await ci_env.start()
    await tick(ci_env, 1000.0)
    [dashboard] = dashboards(ci_env)
    production = written_by(dashboard["body"])
    mistaken = replace(ci_env.settings, database=str(tmp_path / "second.sqlite3"))
    second = await start_bot(mistaken)
    try:
        await enqueue_tick(second.inbox, (DOWNSTREAM,), 1300.0, 300.0)
        await second.inbox.wait_idle()
    finally:
        await second.stop()
    found = by_check(await check_database(mistaken, (DOWNSTREAM,)))[DASHBOARD]
    assert found.status == FAIL
    assert f"#{dashboard['number']}" in found.detail
    assert str(production) in found.detail
    assert found.fix == fixes.FIX_FOREIGN_DASHBOARD.format(setting=ADOPT_SETTING, value=production)
    # Told to adopt it, the doctor no longer calls it a failure.
    adopting = replace(mistaken, adopt_dashboard=production)
    assert by_check(await check_database(adopting, (DOWNSTREAM,)))[DASHBOARD].status == OK


async def _queued_since(database: str, seconds_ago: float) -> None:
    """One delivery queued ``seconds_ago`` in a migrated database that no worker serves."""
    blocking = BlockingRunner(max_workers=1)
    try:
        await migrate_database(database, blocking)
        store = store_for(database, blocking)
        await store.open()
        try:
            received = time.time() - seconds_ago
            await store.enqueue(Delivery("d-1", "github", "push", b"{}", "repo:a/b", received))
        finally:
            await store.close()
    finally:
        blocking.close()


@pytest.mark.parametrize(
    ("seconds_ago", "status"), [(30.0, OK), (INBOX_STALE_SECONDS + 300.0, FAIL)]
)
async def test_the_inbox_depth_and_age_are_the_doctors_not_readiness(
    ci_env: Harness, tmp_path: Path, seconds_ago: float, status: str
) -> None:
    database = str(tmp_path / "bot.sqlite3")
    await _queued_since(database, seconds_ago)
    checks = by_check(await check_database(replace(ci_env.settings, database=database), ()))
    inbox = checks[CHECK_INBOX]
    assert inbox.status == status
    assert inbox.detail.startswith(DETAIL_INBOX.split("{age}")[0].format(queued=1))
    assert inbox.fix == ("" if status == OK else fixes.FIX_INBOX_STALE)
