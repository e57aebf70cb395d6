"""``followup-bot deliveries replay`` against a running service: the service runs it.

The service is the real one (intake, store, inbox, dispatcher) in this process;
the command runs as it would from a shell, with its own connection. Nothing in
the service hears about the replay: its idle workers find the row on their own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.cli.deliveries import REPLAYED
from bot.cli.main import main
from bot.store.protocol import DeliveryStatus
from tests.core.service import Handlers, push_body, running_service


async def test_a_failed_delivery_replayed_from_the_command_line_runs_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "bot.sqlite3"
    handlers = Handlers()
    async with running_service(database, [handlers.router]) as service:
        await service.post("d-1", push_body())
        await service.settle()
        assert (await service.record("d-1")).status is DeliveryStatus.FAILED

        handlers.broken = False
        replay = ["deliveries", "replay", "d-1", "--database", str(database)]
        assert await asyncio.to_thread(main, replay) == 0
        assert REPLAYED.format(id="d-1", previous="failed") in capsys.readouterr().out

        # The row is QUEUED again, so this waits until a worker has run it.
        await service.settle()
        record = await service.record("d-1")
        assert (record.status, record.delivery.attempts) == (DeliveryStatus.DONE, 1)
    assert handlers.calls == {"steady": 1, "fragile": 2}
