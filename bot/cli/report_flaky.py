"""``followup-bot report flaky``: the retried jobs the store recorded, as the flaky table
(``bot.retry.report`` words it; the dashboard shows the same table)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TextIO

from bot.cli.store_access import EXIT_OK, emit, guarded, with_store
from bot.retry.report import flaky_report
from bot.store.access import Access
from bot.store.kinds import Kind
from bot.store.protocol import Store


async def _records(store: Store) -> list[dict[str, Any]]:
    return [doc for _key, doc in await store.list_state(Kind.RETRY_JOB)]


def report_command(database: str | Path, out: TextIO, err: TextIO) -> int:
    """Print the report; a missing, foreign or broken database is one error line (exit 2),
    and it is opened read-only: a wrong path never gets tables created in it."""

    def run() -> int:
        records = asyncio.run(with_store(database, Access.READ, _records))
        emit(out, flaky_report(records))
        return EXIT_OK

    return guarded(run, database, out, err)
