"""The PostgreSQL server the tests and benchmarks start: the tests' without fsync, a
benchmark's (``durable``) with it, so its commits cost what production's do."""

from __future__ import annotations

import asyncpg
import pytest

from sandbox.postgres_server import start_server


@pytest.mark.parametrize(("durable", "fsync"), [(False, "off"), (True, "on")])
async def test_a_server_syncs_its_commits_only_when_durable(durable: bool, fsync: str) -> None:
    server = start_server(durable=durable)
    try:
        conn = await asyncpg.connect(server.url)
        try:
            assert await conn.fetchval("SHOW fsync") == fsync
        finally:
            await conn.close()
        server.halt()
        server.resume()  # an outage keeps the server's settings
        conn = await asyncpg.connect(server.url)
        try:
            assert await conn.fetchval("SHOW fsync") == fsync
        finally:
            await conn.close()
    finally:
        server.stop()
