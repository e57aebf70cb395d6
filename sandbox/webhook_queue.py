"""One queue and one worker task: a stand-in's webhooks leave in the order it emitted them.

Shared by the GitHub and Buildkite stand-ins; each says how to deliver one event.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import aiohttp

log = logging.getLogger(__name__)


class OrderedWebhooks(abc.ABC):
    def __init__(self, name: str) -> None:
        self.url: str | None = None
        self._name = name
        self._session: aiohttp.ClientSession | None = None
        self._queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    @abc.abstractmethod
    async def deliver(self, event: str, payload: Mapping[str, Any]) -> int:
        """Send one event now; returns the receiver's HTTP status."""

    def start(self) -> None:
        self._session = aiohttp.ClientSession()
        self._worker = asyncio.create_task(self._drain(), name=self._name)

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def enqueue(self, event: str, payload: dict[str, Any]) -> None:
        """Queue an event the stand-in emits by itself; dropped when nobody listens."""
        if self.url is not None:
            self._queue.put_nowait((event, payload))

    async def flush(self) -> None:
        await self._queue.join()

    def expected_failure(self, exc: Exception) -> bool:
        """Whether a delivery failure is already accounted for (no log needed)."""
        return False

    async def _drain(self) -> None:
        while True:
            event, payload = await self._queue.get()
            try:
                await self.deliver(event, payload)
            except Exception as exc:  # the worker must survive one bad delivery
                if not self.expected_failure(exc):
                    log.exception("%s: delivery of %s failed", self._name, event)
            finally:
                self._queue.task_done()
