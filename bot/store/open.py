"""The store ``FOLLOWUP_BOT_DATABASE`` names: a PostgreSQL URL, or else a SQLite file."""

from __future__ import annotations

import time
from collections.abc import Callable

from bot.core.blocking import BlockingRunner
from bot.store.access import Access, is_postgres
from bot.store.postgres import PostgresStore, migrate_url
from bot.store.protocol import Store
from bot.store.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from bot.store.sqlite import SQLiteStore


def store_for(
    database: str,
    blocking: BlockingRunner,
    *,
    access: Access = Access.OWNER,
    clock: Callable[[], float] = time.time,
    serve: bool = False,
) -> Store:
    """The backend for ``database``; with ``serve``, as a service's own store.

    A service on SQLite takes the file's single-writer lock (one serve per file); on
    PostgreSQL it joins the other replicas (any number of serves per database).
    """
    if is_postgres(database):
        return PostgresStore(database, clock=clock, access=access)
    return SQLiteStore(database, blocking, clock=clock, access=access, single_writer=serve)


async def migrate_database(database: str, blocking: BlockingRunner) -> int:
    """Apply the migrations ``database`` lacks, without serving; its schema version."""
    if is_postgres(database):
        return await migrate_url(database)
    store = SQLiteStore(database, blocking, access=Access.OWNER)
    await store.open()  # the owner migrates on open
    try:
        return len(SQLITE_MIGRATIONS)
    finally:
        await store.close()
