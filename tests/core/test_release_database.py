"""A database written by release 0.1.0 opens and keeps its meaning.

``data/release-0.1.0.sql`` is the ``sqlite3 .dump`` of a database that release's own
store wrote (a failed push whose bump handler had finished, a done review, a pin's
cooldown record and a PR's landing document, which then shared the kind
``landing``). Handler runs were recorded by module path; a pin's cooldown is now a
kind of its own.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.context.handler_ids import handler_name
from bot.core.blocking import BlockingRunner
from bot.service.app import DEFAULT_ROUTERS
from bot.store.kinds import Kind
from bot.store.legacy_ids import LEGACY_HANDLER_IDS
from bot.store.sqlite import MIGRATIONS, SQLiteStore
from tests.e2e.test_malformed_payloads import registrations

DUMP = Path(__file__).parent / "data" / "release-0.1.0.sql"


def release_database(tmp_path: Path) -> Path:
    path = tmp_path / "followup-bot.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript(DUMP.read_text())
    return path


async def test_handler_runs_and_cooldowns_survive_the_upgrade(
    tmp_path: Path, blocking: BlockingRunner
) -> None:
    store = SQLiteStore(str(release_database(tmp_path)), blocking)
    await store.open()
    try:
        # The dispatcher skips what the old release recorded as done, under its new id.
        assert await store.handlers_done("push-1") == frozenset({"pins.push"})
        assert await store.handlers_done("review-1") == frozenset({"landing.review"})
        cooldown = await store.get_state(Kind.PIN_COOLDOWN, "vllm-project/vllm#flash-attention")
        assert cooldown == {"landed_at": 990.0, "pr": 7}
        landing = await store.get_state(Kind.LANDING, "vllm-project/vllm#7")
        assert landing is not None
        assert landing["merged_sha"] == "abc"
        assert await store.get_state(Kind.LANDING, "vllm-project/vllm#flash-attention") is None
        # A failed delivery of the old release can still be replayed.
        requeue = await store.requeue("push-1", 2000.0)
        assert requeue.requeued
    finally:
        await store.close()
    with sqlite3.connect(tmp_path / "followup-bot.sqlite3") as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (len(MIGRATIONS),)


def test_every_legacy_id_names_a_registered_handler() -> None:
    registered = {handler_name(handler) for handler, _, _ in registrations()}
    assert set(LEGACY_HANDLER_IDS.values()) <= registered
    assert len(registered) == len({handler for handler, _, _ in registrations()})  # unique
    assert DEFAULT_ROUTERS  # the app's routers are where registrations() looks
