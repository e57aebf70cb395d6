"""Fixtures for the registry client: a session, a real registry per test, scripted peers."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from sandbox.oci_registry import RegistryServer, running_registry

from ..github_client.github_fakes import FakeClock
from ..scripted_server import ScriptedServer

ServerFactory = Callable[[Any], Awaitable[TestServer]]
START = 1_700_000_000.0


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as opened:
        yield opened


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


# Each test starts its own registry (about 0.1 s) on its own port: xdist workers never share.
@pytest.fixture
async def open_registry(tmp_path: Path) -> AsyncIterator[RegistryServer]:
    async with running_registry(tmp_path / "registry", auth="none") as server:
        yield server


@pytest.fixture
async def basic_registry(tmp_path: Path) -> AsyncIterator[RegistryServer]:
    async with running_registry(tmp_path / "registry", auth="basic") as server:
        yield server


@pytest.fixture
async def token_registry(tmp_path: Path) -> AsyncIterator[RegistryServer]:
    async with running_registry(tmp_path / "registry", auth="token") as server:
        yield server


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound but never listening: connecting is refused, and nobody else
    can take it while the test runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]


@pytest.fixture
def scripted() -> ScriptedServer:
    return ScriptedServer()


@pytest.fixture
async def scripted_url(
    aiohttp_server: ServerFactory, scripted: ScriptedServer
) -> AsyncIterator[str]:
    server = await aiohttp_server(scripted.app)
    yield str(server.make_url("")).rstrip("/")
    scripted.release()  # let hanging handlers finish so the server can stop
