"""Deliveries answered 202 survive a SIGKILL and are processed exactly once.

Two real processes share one SQLite file: the first accepts deliveries and
dies (SIGKILL) while its workers are mid-run; the second recovers and runs
everything. Readiness and progress come from lines the children print.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.core.blocking import BlockingRunner
from bot.store.protocol import DeliveryStatus
from bot.store.sqlite import SQLiteStore

from .crash_child import SECRET_VARIABLE, WORKERS
from .helpers import SECRET, sign

CHILD = Path(__file__).with_name("crash_child.py")
REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
DELIVERIES = 12
SUBJECTS = 4
# Safety net only: a broken child fails the test instead of hanging it.
SAFETY = 60.0


class Child:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def line(self) -> str:
        assert self.process.stdout is not None
        raw = await asyncio.wait_for(self.process.stdout.readline(), SAFETY)
        assert raw, f"child exited early with {await self.process.wait()}"
        return raw.decode().strip()

    async def ready_port(self) -> int:
        word, port = (await self.line()).split()
        assert word == "READY"
        return int(port)


@pytest.fixture
async def spawn(tmp_path: Path) -> AsyncIterator[list[Child]]:
    children: list[Child] = []
    yield children
    for child in children:
        if child.process.returncode is None:
            child.process.kill()
            await child.process.wait()


async def start_child(children: list[Child], tmp_path: Path, *args: str) -> Child:
    env = dict(os.environ)
    env[SECRET_VARIABLE] = SECRET.decode()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY_ROOT), env.get("PYTHONPATH")]))
    stderr = (tmp_path / f"child-{len(children)}.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=env,
    )
    stderr.close()  # the child holds its own descriptor
    child = Child(process)
    children.append(child)
    return child


async def post_all(port: int, ids: list[str]) -> None:
    async with aiohttp.ClientSession() as session:
        for n, delivery_id in enumerate(ids):
            body = json.dumps({"n": n, "subject": f"s{n % SUBJECTS}"}).encode()
            response = await session.post(
                f"http://127.0.0.1:{port}/webhooks/github",
                data=body,
                headers={
                    "X-GitHub-Event": "push",
                    "X-GitHub-Delivery": delivery_id,
                    "X-Hub-Signature-256": sign(body),
                    "Content-Type": "application/json",
                },
            )
            assert response.status == 202
            assert await response.json() == {"status": "accepted"}


async def test_accepted_deliveries_survive_sigkill_and_run_exactly_once(
    tmp_path: Path, spawn: list[Child]
) -> None:
    database = str(tmp_path / "bot.sqlite3")
    output = tmp_path / "processed.txt"
    ids = [f"delivery-{n:02d}" for n in range(DELIVERIES)]

    first = await start_child(spawn, tmp_path, database, "hang")
    await post_all(await first.ready_port(), ids)
    # Kill only once the workers are inside the dispatcher, so the crash
    # interrupts RUNNING deliveries as well as QUEUED ones.
    interrupted = set()
    for _ in range(WORKERS):
        word, delivery_id = (await first.line()).split()
        assert word == "STARTED"
        interrupted.add(delivery_id)
    first.process.kill()
    await first.process.wait()

    second = await start_child(spawn, tmp_path, database, "record", str(output))
    await second.ready_port()
    assert await second.line() == "IDLE"
    assert await asyncio.wait_for(second.process.wait(), SAFETY) == 0

    processed = output.read_text().splitlines()
    assert Counter(processed) == Counter(ids)  # every delivery, each exactly once

    blocking = BlockingRunner(max_workers=1)
    store = SQLiteStore(database, blocking)
    await store.open()
    try:
        records = await store.list_deliveries(limit=DELIVERIES + 1)
        assert {r.status for r in records} == {DeliveryStatus.DONE}
        attempts = {r.delivery.delivery_id: r.delivery.attempts for r in records}
        assert {i for i, n in attempts.items() if n == 2} == interrupted
        assert {i for i, n in attempts.items() if n == 1} == set(ids) - interrupted
    finally:
        await store.close()
        blocking.close()
