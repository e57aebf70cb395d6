"""Drive a real ``followup-bot serve`` from the stand-ins and kill it between two writes.

A stand-in applies a chosen write, then SIGKILLs the bot before it can answer.
The driver restarts it and waits until the bot and both stand-ins are quiet,
so the test can then count what was written.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from sandbox.harness import BUILDKITE_TOKEN, Harness
from sandbox.ports import free_port
from sandbox.served import Served, serve, serve_env

T = TypeVar("T")
QUIET_TIMEOUT = 60.0
QUIET_ROUNDS = 2


@dataclass(frozen=True)
class WriteBoundary:
    """A write after which the bot dies: a GitHub operation id or a Buildkite path part."""

    side: Literal["github", "buildkite"]
    match: str

    def __str__(self) -> str:
        return f"{self.side}:{self.match}"


def github(operation: str) -> WriteBoundary:
    return WriteBoundary("github", operation)


def buildkite(path_part: str) -> WriteBoundary:
    return WriteBoundary("buildkite", path_part)


class ServedBot:
    """The bot as another process, wired to the harness's stand-ins.

    The process stays up from one ``run`` to the next and is replaced only when a
    ``crash_on`` kills it: starting one costs ~0.6 s of imports, and the random-kill test
    would otherwise start 50 of them. ``stop`` (the ``served`` fixture calls it) ends it.
    """

    def __init__(self, env: Harness, workdir: Path) -> None:
        self.env = env
        port = free_port()
        self.variables = serve_env(env, workdir, port)
        env.sandbox.webhook_url = f"http://127.0.0.1:{port}/webhooks/github"
        if env.buildkite is not None:
            self.variables.update(
                FOLLOWUP_BOT_BUILDKITE_API_TOKEN=BUILDKITE_TOKEN,
                FOLLOWUP_BOT_BUILDKITE_API_URL=env.ci.base_url,
                FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET=env.settings.webhook_secret,
            )
            env.ci.webhook_url = f"http://127.0.0.1:{port}/webhooks/buildkite"
        self.database = Path(self.variables["FOLLOWUP_BOT_DATABASE"])
        self._process: Served | None = None
        self._stack = AsyncExitStack()

    async def _started(self) -> Served:
        if self._process is None:
            self._process = await self._stack.enter_async_context(serve(self.variables))
        return self._process

    async def stop(self) -> None:
        """End the bot's process (it may be dead already)."""
        await self._stack.aclose()
        self._process = None

    async def quiet(self) -> None:
        """Until the bot has nothing left to do and the stand-ins nothing left to say."""
        async with asyncio.timeout(QUIET_TIMEOUT):
            rounds = 0
            while rounds < QUIET_ROUNDS:
                seen = self._activity()
                await self.env.sandbox.flush()
                if self.env.buildkite is not None:
                    await self.env.ci.flush()
                idle = await asyncio.to_thread(_unfinished, self.database) == 0
                rounds = rounds + 1 if idle and self._activity() == seen else 0
                await asyncio.sleep(0.01)  # polling another process; not a timing assertion

    def _activity(self) -> tuple[int, ...]:
        counts = [len(self.env.sandbox.requests), len(self.env.sandbox.deliveries)]
        if self.env.buildkite is not None:
            counts += [len(self.env.ci.requests), len(self.env.ci.deliveries)]
        return tuple(counts)

    async def run(self, act: Callable[[], Awaitable[T]]) -> T:
        """``act`` with the bot up, then wait for quiet."""
        await self._started()
        result = await act()
        await self.quiet()
        return result

    async def crash_on(self, boundary: WriteBoundary, act: Callable[[], Awaitable[T]]) -> T:
        """``act`` with the bot killed right after ``boundary`` is applied; then restart
        it and wait until it has finished its work."""
        doomed = await self._started()
        faults = self.env.sandbox.faults if boundary.side == "github" else self.env.ci.faults
        faults.crash_after(boundary.match, doomed.kill)
        result = await act()
        async with asyncio.timeout(QUIET_TIMEOUT):
            await doomed.wait()
        await self.stop()
        assert faults.injected, f"{boundary} was never written"
        await self._started()
        await self._redeliver_missed()
        await self.quiet()
        return result

    async def _redeliver_missed(self) -> None:
        """GitHub webhooks the dead bot could not take, redelivered as GitHub lets one do."""
        for delivery in [d for d in self.env.sandbox.deliveries if d.status != 202]:
            await self.env.sandbox.deliver(
                delivery.event, delivery.payload, delivery_id=delivery.delivery_id
            )


def delivered(database: Path) -> int:
    """How many deliveries (webhooks and the bot's own) the bot's inbox has taken."""
    with sqlite3.connect(database, timeout=5.0) as conn:
        return int(conn.execute("SELECT count(*) FROM deliveries").fetchone()[0])


def _unfinished(database: Path) -> int:
    if not database.exists():
        return -1
    with sqlite3.connect(database, timeout=5.0) as conn:
        row = conn.execute(
            "SELECT count(*) FROM deliveries WHERE status IN ('queued', 'running')"
        ).fetchone()
    return int(row[0])
