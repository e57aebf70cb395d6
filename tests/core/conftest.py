from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from bot.core.blocking import BlockingRunner
from bot.store.sqlite import SQLiteStore


@pytest.fixture
def blocking() -> Iterator[BlockingRunner]:
    runner = BlockingRunner(max_workers=4, timeout=10.0)
    yield runner
    runner.close()


@pytest.fixture
async def store(blocking: BlockingRunner) -> AsyncIterator[SQLiteStore]:
    sqlite_store = SQLiteStore(":memory:", blocking)
    await sqlite_store.open()
    yield sqlite_store
    await sqlite_store.close()
