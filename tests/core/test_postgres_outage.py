"""PostgreSQL goes away under a running service: webhooks are refused (503), never
acknowledged unstored; when it is back, a redelivery is stored and run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.store.protocol import DeliveryStatus
from sandbox.postgres_server import PostgresServer, create_database, start_server

from .service import Handlers, push_body, running_service

# A sender's redeliveries after the restart: the pool's connections died with the
# server, so the first requests may still find a dead one; a bound, not a timing.
REDELIVERIES = 20


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of this test's own, to stop and start again."""
    server = start_server()
    yield server
    server.stop()


async def test_an_outage_refuses_webhooks_and_a_redelivery_gets_in_after_it(
    own_server: PostgresServer,
) -> None:
    url = await create_database(own_server.url)
    handlers = Handlers()
    handlers.broken = False
    async with running_service(url, [handlers.router]) as service:
        assert (await service.post("before", push_body(1)))[0] == 202
        await service.settle()

        own_server.halt()
        status, answer = await service.post("during", push_body(2))
        assert status == 503  # GitHub shows it failed; nothing was acknowledged unstored
        assert "during" not in str(answer)

        own_server.resume()
        statuses = []
        for _ in range(REDELIVERIES):
            status, _ = await service.post("during", push_body(2))
            statuses.append(status)
            if status == 202:
                break
        assert statuses[-1] == 202, statuses
        await service.settle()
        assert (await service.record("during")).status is DeliveryStatus.DONE
        assert (await service.record("before")).status is DeliveryStatus.DONE
    assert handlers.calls["steady"] == 2
