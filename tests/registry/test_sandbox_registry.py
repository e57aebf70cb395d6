"""The registry stand-in itself: a taken port is retried, and failures to start say why."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from sandbox import oci_registry
from sandbox.oci_registry import NOT_INSTALLED, RegistryStartError, running_registry


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A port another process already serves on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


async def test_a_port_taken_meanwhile_is_replaced_by_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listening_port: int
) -> None:
    real = oci_registry._free_port
    ports = iter([listening_port])
    monkeypatch.setattr(oci_registry, "_free_port", lambda: next(ports, None) or real())

    async with running_registry(tmp_path, auth="none") as registry:
        assert registry.host != f"127.0.0.1:{listening_port}"
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{registry.url}/v2/") as response,
        ):
            assert response.status == 200


async def test_a_missing_binary_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(oci_registry, "REGISTRY_BINARY", "no-such-registry-binary")
    with pytest.raises(RegistryStartError, match="apt-get install") as raised:
        async with running_registry(tmp_path):
            pass
    assert str(raised.value) == NOT_INSTALLED


async def test_a_registry_that_exits_shows_its_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every port taken: the registry exits each time, and the last error is shown.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(oci_registry, "_free_port", lambda: port)
        with pytest.raises(RegistryStartError, match="address already in use") as raised:
            async with running_registry(tmp_path):
                pass
    assert str(raised.value).startswith("docker-registry exited with ")


async def test_pushes_authenticate_in_each_mode(tmp_path: Path) -> None:
    for auth in ("basic", "token"):
        async with running_registry(tmp_path / auth, auth=auth) as registry:
            digest = await registry.push_image("ns/repo", "v1")
            assert digest.startswith("sha256:")
            assert registry.pushed == ["ns/repo:v1"]
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{registry.url}/v2/ns/repo/tags/list") as anonymous,
            ):
                assert anonymous.status == 401  # the registry does require auth
