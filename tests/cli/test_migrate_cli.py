"""``followup-bot migrate`` on both backends, run as the process a deployment runs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import asyncpg

from bot.cli.migrate import MIGRATED
from bot.store import postgres_schema, sqlite
from bot.store.access import redacted


def migrate(database: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "migrate", "--database", database],
        env={**os.environ, "FOLLOWUP_BOT_DATABASE": ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_migrate_creates_and_upgrades_a_sqlite_file(tmp_path: Path) -> None:
    database = str(tmp_path / "bot.sqlite3")
    first, again = migrate(database), migrate(database)
    expected = MIGRATED.format(database=database, version=len(sqlite.MIGRATIONS)) + "\n"
    assert (first.returncode, first.stdout) == (0, expected)
    assert (again.returncode, again.stdout) == (0, expected)  # nothing left to apply


async def test_replicas_migrating_at_once_all_end_at_the_same_version(postgres_url: str) -> None:
    runs = await asyncio.gather(*(asyncio.to_thread(migrate, postgres_url) for _ in range(3)))
    expected = MIGRATED.format(database=postgres_url, version=len(postgres_schema.MIGRATIONS))
    assert [(r.returncode, r.stdout.strip(), r.stderr) for r in runs] == [(0, expected, "")] * 3
    conn = await asyncpg.connect(postgres_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM schema_version") == 1
    finally:
        await conn.close()


def test_an_unreachable_server_is_one_error_line_without_the_password() -> None:
    url = "postgresql://bot:s3cret@127.0.0.1:1/bot"
    result = migrate(url)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: cannot connect to " + redacted(url))
    assert "s3cret" not in result.stderr
