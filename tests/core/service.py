"""The real service (``create_app``: intake, store, inbox, dispatcher) on loopback, with
scripted handlers instead of the bot's, for tests that go from a signed POST to a run."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from gidgethub import routing, sansio

from bot.context.handler_ids import handler_id
from bot.context.services import Services
from bot.core.errors import PermanentError
from bot.core.settings import Settings
from bot.service.app import INBOX, SERVICES, create_app
from bot.service.inbox import Inbox
from bot.store.protocol import DeliveryRecord, Store

from .helpers import SECRET, sign
from .test_settings import PEM

# Safety net only: a broken service fails the test instead of hanging it.
SAFETY = 30.0
BROKEN = "the fragile handler is broken"


def push_body(n: int = 1) -> bytes:
    return json.dumps(
        {"ref": "refs/heads/main", "n": n, "repository": {"full_name": "o/r"}}
    ).encode()


STEADY, FRAGILE = "test.steady", "test.fragile"


class Handlers:
    """Two ``push`` handlers: ``steady`` always completes; ``fragile`` fails for good
    while ``broken`` is set, and waits for ``gate`` when one is given."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.broken = True
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()
        self.router = routing.Router()
        self.router.add(self.steady, "push")
        self.router.add(self.fragile, "push")

    @handler_id(STEADY)
    async def steady(self, event: sansio.Event, services: Services) -> None:
        self.calls["steady"] += 1

    @handler_id(FRAGILE)
    async def fragile(self, event: sansio.Event, services: Services) -> None:
        self.calls["fragile"] += 1
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.broken:
            raise PermanentError(BROKEN)


@dataclass
class Service:
    app: web.Application
    runner: web.AppRunner
    url: str
    database: str | Path

    @property
    def inbox(self) -> Inbox:
        return self.app[INBOX]

    @property
    def store(self) -> Store:
        return self.app[SERVICES].store

    async def post(
        self, delivery_id: str, body: bytes, event: str = "push"
    ) -> tuple[int, dict[str, Any]]:
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id,
            "X-Hub-Signature-256": sign(body),
            "Content-Type": "application/json",
        }
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url + "/webhooks/github", data=body, headers=headers) as response,
        ):
            return response.status, await response.json()

    async def settle(self) -> None:
        await asyncio.wait_for(self.inbox.wait_idle(), SAFETY)

    async def record(self, delivery_id: str) -> DeliveryRecord:
        found = await self.store.get_delivery(delivery_id)
        assert found is not None
        return found


def settings_for(database: str | Path) -> Settings:
    return Settings(
        webhook_secret=SECRET.decode(),
        app_id="1",
        private_key=PEM,
        repositories=(),
        database=str(database),
        reconcile_interval=0.0,
    )


@asynccontextmanager
async def running_service(
    database: str | Path, routers: Sequence[routing.Router], *, backoff_base: float | None = None
) -> AsyncIterator[Service]:
    app = create_app(settings_for(database), routers=routers, backoff_base=backoff_base)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        yield Service(runner.app, runner, f"http://127.0.0.1:{port}", database)
    finally:
        await runner.cleanup()
