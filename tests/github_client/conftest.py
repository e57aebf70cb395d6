from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.github.client import GitHubApp
from sandbox.harness import app_key

from .github_fakes import APP_ID, FakeClock, FakeGitHub, MakeApp, RecordingSleep

START = 1_700_000_000.0


@pytest.fixture(scope="session")
def rsa_keys() -> tuple[str, str]:
    """(private PEM, public PEM); one per session, the same pair the e2e harness uses."""
    return app_key()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def sleeps(clock: FakeClock) -> RecordingSleep:
    return RecordingSleep(clock)


@pytest.fixture
def fake_github(clock: FakeClock, rsa_keys: tuple[str, str]) -> FakeGitHub:
    return FakeGitHub(clock, rsa_keys[1])


@pytest.fixture
async def github_server(
    aiohttp_server: Callable[[Any], Awaitable[TestServer]], fake_github: FakeGitHub
) -> AsyncIterator[TestServer]:
    server = await aiohttp_server(fake_github.app)
    yield server
    # Let hanging handlers finish so the server can shut down promptly.
    fake_github.release()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client_session:
        yield client_session


@pytest.fixture
def make_app(
    session: aiohttp.ClientSession,
    github_server: TestServer,
    rsa_keys: tuple[str, str],
    clock: FakeClock,
    sleeps: RecordingSleep,
) -> MakeApp:
    def make(**overrides: Any) -> GitHubApp:
        settings: dict[str, Any] = {
            "app_id": APP_ID,
            "private_key": rsa_keys[0],
            "base_url": str(github_server.make_url("")),
            "clock": clock,
            "sleep": sleeps,
        }
        settings.update(overrides)
        return GitHubApp(session, **settings)

    return make


@pytest.fixture
def github_app(make_app: MakeApp) -> GitHubApp:
    return make_app()
