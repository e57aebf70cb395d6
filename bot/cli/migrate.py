"""``followup-bot migrate``: bring the database's schema up to date, then stop.

``serve`` migrates at start-up too; this is for deployments that run migrations as a
step of their own before the replicas start (a Kubernetes Job, a compose one-shot).
"""

from __future__ import annotations

import asyncio
from typing import TextIO

from bot.cli.store_access import emit, guarded
from bot.core.blocking import BlockingRunner
from bot.store.access import redacted
from bot.store.open import migrate_database

MIGRATED = "{database}: schema version {version}"


def migrate_command(database: str, out: TextIO, err: TextIO) -> int:
    def run() -> int:
        blocking = BlockingRunner(max_workers=1)
        try:
            version = asyncio.run(migrate_database(database, blocking))
        finally:
            blocking.close()
        emit(out, MIGRATED.format(database=redacted(database), version=version))
        return 0

    return guarded(run, database, out, err)
