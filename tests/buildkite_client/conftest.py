from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.buildkite.client import BuildkiteClient
from bot.buildkite.transport import BuildkiteConnection

from ..core.conftest import blocking, store
from ..github_client.github_fakes import FakeClock, RecordingSleep
from .buildkite_fakes import TOKEN, FakeBuildkite, MakeClient

# The inbox fixtures of the core tests, shared rather than copied.
__all__ = ["blocking", "store"]

START = 1_700_000_000.0

ServerFactory = Callable[[Any], Awaitable[TestServer]]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def sleeps(clock: FakeClock) -> RecordingSleep:
    return RecordingSleep(clock)


@pytest.fixture
def fake_buildkite() -> FakeBuildkite:
    return FakeBuildkite()


@pytest.fixture
async def buildkite_server(
    aiohttp_server: ServerFactory, fake_buildkite: FakeBuildkite
) -> AsyncIterator[TestServer]:
    server = await aiohttp_server(fake_buildkite.app)
    yield server
    fake_buildkite.release()  # let hanging handlers finish so the server can stop


@pytest.fixture
def storage() -> FakeBuildkite:
    """Another origin, standing in for the signed storage URLs artifacts redirect to."""
    return FakeBuildkite()


@pytest.fixture
async def storage_server(aiohttp_server: ServerFactory, storage: FakeBuildkite) -> TestServer:
    return await aiohttp_server(storage.app)


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client_session:
        yield client_session


@pytest.fixture
def make_client(
    session: aiohttp.ClientSession,
    buildkite_server: TestServer,
    clock: FakeClock,
    sleeps: RecordingSleep,
) -> MakeClient:
    def make(**overrides: Any) -> BuildkiteClient:
        settings: dict[str, Any] = {
            "api_url": str(buildkite_server.make_url("/v2")),
            "token": TOKEN,
        }
        settings.update(overrides)
        return BuildkiteClient(session, BuildkiteConnection(**settings), clock=clock, sleep=sleeps)

    return make


@pytest.fixture
def client(make_client: MakeClient) -> BuildkiteClient:
    return make_client()
