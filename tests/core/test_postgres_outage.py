"""PostgreSQL goes away under a running service: webhooks are refused (503), never
acknowledged unstored; when it is back, a redelivery is stored and run. A delivery
whose handler meets the outage is retried, not failed, and the outage is one line when
it begins and one when it ends (a server of the test's own, stopped and started)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator

import asyncpg
import pytest
from gidgethub import routing, sansio

from bot.context.handler_ids import handler_id
from bot.context.services import Services
from bot.store.outage import LOG_BACK, LOG_UNREACHABLE
from bot.store.protocol import DeliveryRecord, DeliveryStatus
from sandbox.postgres_server import PostgresServer, create_database, start_server

from .service import Handlers, Service, push_body, running_service

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


WRITER = "test.writer"
# How long the test waits for the service to finish after the outage: a safety net only.
SAFETY = 60.0


class Writer:
    """A ``push`` handler that writes a state document; its first run waits at ``gate``
    (so the test can stop the database under it) before it writes."""

    def __init__(self) -> None:
        self.calls = 0
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.router = routing.Router()
        self.router.add(self.write, "push")

    @handler_id(WRITER)
    async def write(self, event: sansio.Event, services: Services) -> None:
        self.calls += 1
        self.started.set()
        await self.gate.wait()
        await services.store.put_state("test-written", event.delivery_id, {"calls": self.calls})


async def done(service: Service, delivery_id: str) -> DeliveryRecord:
    """The delivery once it is finished (asked again while the pool's dead connections
    are replaced after the restart)."""
    async with asyncio.timeout(SAFETY):
        while True:
            try:
                record = await service.record(delivery_id)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                record = None
            if record is not None and record.status in (DeliveryStatus.DONE, DeliveryStatus.FAILED):
                return record
            await asyncio.sleep(0.05)  # polling the database; not a timing assertion


async def test_the_database_stopped_under_a_handler_delays_it_and_says_so_once(
    own_server: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    url = await create_database(own_server.url)
    writer = Writer()
    async with running_service(url, [writer.router], backoff_base=0.05) as service:
        assert (await service.post("acknowledged", push_body(1)))[0] == 202
        await asyncio.wait_for(writer.started.wait(), SAFETY)

        own_server.halt()  # mid-handler: its write, then its worker's turn, meet no database
        writer.gate.set()
        await until(lambda: service.store.outage.down)  # the worker's turn says so
        assert (await service.post("during", push_body(2)))[0] == 503  # redelivered later
        own_server.resume()

        record = await done(service, "acknowledged")
        assert record.status is DeliveryStatus.DONE  # not failed: an outage is weather
        assert await service.store.get_state("test-written", "acknowledged") == {"calls": 2}
        await until(lambda: not service.store.outage.down)  # a worker found it again

    told = [r for r in caplog.records if r.name == "bot.store.outage"]
    assert [r.msg for r in told] == [LOG_UNREACHABLE, LOG_BACK]
    # No traceback from the workers, the recovery loop, retention or the intake (whose
    # 503 is one line of its own), and none from asyncpg's pool either.
    quiet = [r for r in caplog.records if r.name.startswith(("bot.", "asyncpg"))]
    assert [r.getMessage() for r in quiet if r.exc_info] == []
    assert writer.calls == 2


async def until(condition: Callable[[], bool]) -> None:
    """Poll the service's state until ``condition`` holds (bounded by SAFETY)."""
    async with asyncio.timeout(SAFETY):
        while True:
            if condition():
                return
            await asyncio.sleep(0.01)  # polling; not a timing assertion
