"""Fixtures for driving the Buildkite stand-in over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from sandbox.buildkite_server import BuildkiteSandbox

from ..sandbox.helpers import FakeClock
from .helpers import API_TOKEN, PIPELINE, WEBHOOK_TOKEN, BuildkiteApi, Received, Receiver


@pytest.fixture
def clock() -> FakeClock:
    found = FakeClock()
    found.now = 1_800_000_010.25  # 10.25 s into a rate-limit window: resets are predictable
    return found


@pytest.fixture
def signature_mode() -> bool:
    return True


@pytest.fixture
async def bk(clock: FakeClock, signature_mode: bool) -> AsyncIterator[BuildkiteSandbox]:
    server = BuildkiteSandbox(
        api_token=API_TOKEN,
        webhook_token=WEBHOOK_TOKEN,
        signature_mode=signature_mode,
        clock=clock,
    )
    await server.start()
    server.add_pipeline(PIPELINE, name="CI")
    yield server
    await server.close()
    assert server.errors == []


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
def api(bk: BuildkiteSandbox, session: aiohttp.ClientSession) -> BuildkiteApi:
    return BuildkiteApi(session, bk.base_url)


@pytest.fixture
async def receiver(aiohttp_server: Any, bk: BuildkiteSandbox) -> Receiver:
    app = web.Application()
    found = Receiver(url="")

    async def record(request: web.Request) -> web.Response:
        found.received.append(Received(dict(request.headers), await request.read()))
        return web.Response(status=200)

    app.router.add_post("/webhooks/buildkite", record)
    server = await aiohttp_server(app)
    found.url = str(server.make_url("/webhooks/buildkite"))
    bk.webhook_url = found.url
    return found
