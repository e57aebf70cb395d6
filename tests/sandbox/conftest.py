"""Fixtures for driving the GitHub stand-in over HTTP (aiohttp, gidgethub, PyGithub)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from gidgethub.aiohttp import GitHubAPI

from sandbox.contract import Contract
from sandbox.github_server import GitHubSandbox
from sandbox.keys import generate_app_key

from .helpers import (
    APP_ID,
    FILES,
    INSTALLATION_ID,
    REPO,
    SECRET,
    FakeClock,
    RawApi,
    Received,
    Receiver,
    app_jwt,
)


@pytest.fixture(scope="session")
def app_keys() -> tuple[str, str]:
    return generate_app_key()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def sandbox(
    tmp_path: Path, app_keys: tuple[str, str], clock: FakeClock
) -> AsyncIterator[GitHubSandbox]:
    contract = await asyncio.to_thread(Contract.load)
    server = GitHubSandbox(
        tmp_path / "github",
        app_id=APP_ID,
        app_public_key_pem=app_keys[1],
        webhook_secret=SECRET,
        contract=contract,
        clock=clock,
    )
    await server.start()
    server.create_repo(REPO, files=FILES, installation_id=INSTALLATION_ID)
    yield server
    await server.close()


@pytest.fixture
async def receiver(aiohttp_server: Any, sandbox: GitHubSandbox) -> Receiver:
    app = web.Application()
    found = Receiver(url="")

    async def record(request: web.Request) -> web.Response:
        found.received.append(Received(dict(request.headers), await request.read()))
        return web.Response(status=202)

    app.router.add_post("/webhooks/github", record)
    server = await aiohttp_server(app)
    found.url = str(server.make_url("/webhooks/github"))
    sandbox.webhook_url = found.url
    return found


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
async def token(
    sandbox: GitHubSandbox,
    session: aiohttp.ClientSession,
    app_keys: tuple[str, str],
    clock: FakeClock,
) -> str:
    gh = GitHubAPI(session, "sandbox-tests", base_url=sandbox.base_url)
    answer = await gh.post(
        f"/app/installations/{INSTALLATION_ID}/access_tokens",
        data=b"",
        jwt=app_jwt(app_keys[0], clock.now),
    )
    value: str = answer["token"]
    return value


@pytest.fixture
def gh(sandbox: GitHubSandbox, session: aiohttp.ClientSession, token: str) -> GitHubAPI:
    return GitHubAPI(session, "sandbox-tests", oauth_token=token, base_url=sandbox.base_url)


@pytest.fixture
def raw(sandbox: GitHubSandbox, session: aiohttp.ClientSession, token: str) -> RawApi:
    return RawApi(session, sandbox.base_url, token)


@pytest.fixture(autouse=True)
def _show_violations(request: pytest.FixtureRequest) -> Any:
    """Print the stand-in's contract problems next to a failing test's traceback."""
    server: GitHubSandbox | None = None
    if "sandbox" in request.fixturenames:
        server = request.getfixturevalue("sandbox")
    yield
    for problem in server.violations if server else []:
        print("VIOLATION:", problem)
