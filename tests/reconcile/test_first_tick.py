"""A replica started on PostgreSQL makes its first reconcile tick at start-up, not an
interval later: the ticker and retention ask for their locks at the same moment, on the
replica's one presence connection, and must take turns on it."""

from __future__ import annotations

import asyncio
import dataclasses

from aiohttp import web

from bot.service.app import SERVICES, create_app
from bot.store.protocol import DeliveryRecord
from tests.core.service import settings_for

HOUR = 3600.0
# Safety net only: without the fix the first tick came an hour later, so this fails.
SAFETY = 30.0


async def reconcile_deliveries(app: web.Application) -> list[DeliveryRecord]:
    records = await app[SERVICES].store.list_deliveries()
    return [r for r in records if r.delivery.delivery_id.startswith("reconcile:o/r:")]


async def test_the_first_tick_comes_at_start_up(postgres_url: str) -> None:
    settings = dataclasses.replace(
        settings_for(postgres_url), repositories=("o/r",), reconcile_interval=HOUR
    )
    runner = web.AppRunner(create_app(settings, routers=()))
    await runner.setup()  # the services start: inbox, retention, the ticker
    try:
        async with asyncio.timeout(SAFETY):
            while True:
                ticks = await reconcile_deliveries(runner.app)
                if ticks:
                    break
                await asyncio.sleep(0.02)  # polling the database; not a timing assertion
        assert len(ticks) == 1
    finally:
        await runner.cleanup()
