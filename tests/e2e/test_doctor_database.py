"""``followup-bot doctor``'s database and dashboard checks, on SQLite and PostgreSQL."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

from bot.dashboard.issue import ADOPT_SETTING
from bot.dashboard.ownership import written_by
from bot.doctor import fixes
from bot.doctor.database_check import CHECK_DASHBOARD, CHECK_DATABASE, check_database
from bot.doctor.result import FAIL, OK, SKIP, CheckResult
from bot.doctor.run import exit_code, run_checks
from bot.service.blocking import BlockingRunner
from bot.service.reconcile import enqueue_tick
from bot.store.kinds import Kind
from bot.store.open import migrate_database
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
    [database, _] = await check_database(settings, (DOWNSTREAM,))
    assert (database.status, database.fix) == (FAIL, fixes.FIX_DATABASE_SCHEMA)
    blocking = BlockingRunner(max_workers=1)
    try:
        await migrate_database(postgres_url, blocking)
    finally:
        blocking.close()
    [database, dashboard] = await check_database(settings, (DOWNSTREAM,))
    assert database.status == OK, database
    assert dashboard.status == OK


async def test_a_sqlite_file_that_is_not_the_bots(ci_env: Harness, tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    other.write_bytes(b"not a database at all, just bytes" * 10)
    [database] = await check_database(replace(ci_env.settings, database=str(other)), ())
    assert database.status == FAIL


async def test_a_database_not_created_yet_is_no_failure(ci_env: Harness, tmp_path: Path) -> None:
    settings = replace(ci_env.settings, database=str(tmp_path / "later" / "bot.sqlite3"))
    [database] = await check_database(settings, ())
    assert database.status == SKIP
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
