"""The bot's intake and inbox in a child process, for the crash-recovery test.

Usage: ``python crash_child.py DATABASE hang`` or ``... DATABASE record OUTPUT``;
the webhook secret comes from ``CRASH_CHILD_SECRET``. Prints ``READY <port>``
once it listens on a loopback port. In ``hang`` mode the dispatcher prints
``STARTED <id>`` and never returns (the test then SIGKILLs the process); in
``record`` mode it appends each delivery id to OUTPUT, prints ``IDLE`` once
the inbox is idle, and exits cleanly.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.core.blocking import BlockingRunner
from bot.service.inbox import Dispatcher, Inbox
from bot.service.webhooks import github_webhook_handler
from bot.store.protocol import Delivery
from bot.store.sqlite import SQLiteStore

SECRET_VARIABLE = "CRASH_CHILD_SECRET"
WORKERS = 2


def subject_of(event: str, payload: Mapping[str, Any]) -> str:
    return str(payload["subject"])


def say(line: str) -> None:
    print(line, flush=True)


async def hang(delivery: Delivery) -> None:
    say(f"STARTED {delivery.delivery_id}")
    await asyncio.Event().wait()


def recorder(output: Path) -> Dispatcher:
    def append(delivery_id: str) -> None:
        with output.open("a", encoding="utf-8") as file:
            file.write(delivery_id + "\n")

    async def record(delivery: Delivery) -> None:
        await asyncio.to_thread(append, delivery.delivery_id)

    return record


async def main(argv: list[str]) -> None:
    database, mode = argv[0], argv[1]
    dispatch = hang if mode == "hang" else recorder(Path(argv[2]))
    blocking = BlockingRunner(max_workers=4, timeout=30.0)
    store = SQLiteStore(database, blocking)
    await store.open()
    inbox = Inbox(store, dispatch, workers=WORKERS)
    app = web.Application()
    secret = os.environ[SECRET_VARIABLE].encode()
    app.router.add_post("/webhooks/github", github_webhook_handler(secret, inbox, subject_of))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    await inbox.start()
    say(f"READY {port}")
    try:
        if mode == "hang":
            await asyncio.Event().wait()
        await inbox.wait_idle()
        say("IDLE")
    finally:
        await inbox.stop()
        await runner.cleanup()
        await store.close()
        blocking.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
