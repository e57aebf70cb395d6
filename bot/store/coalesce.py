"""Write concurrent requests together: one transaction (and one thread hop) per batch.

A store's writes cost mostly per transaction (a commit, a hop to the database
thread, on the loop a future and a wake-up), not per row. Requests that arrive
while a batch is being written wait and go together as the next batch, so under
load the cost per request falls with the load, and alone a request is written at
once: no timer, no added latency.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

R = TypeVar("R")
T = TypeVar("T")

# Writes a batch and answers each request, in order: a value, or the exception
# that request alone failed with. Raising fails the whole batch.
BatchWriter = Callable[[list[R]], Awaitable[Sequence[T | BaseException]]]


class Coalescer(Generic[R, T]):
    def __init__(self, write: BatchWriter[R, T], name: str) -> None:
        self._write = write
        self._name = name
        self._pending: list[tuple[R, asyncio.Future[T]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def submit(self, request: R) -> T:
        """Queue ``request`` for the next batch and wait for its answer."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain(), name=self._name)
        # shield: a caller that stops waiting must not cancel a batch others wait on
        return await asyncio.shield(future)

    async def wait_written(self) -> None:
        """Wait until every batch submitted so far has been written (or has failed)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                answers = await self._write([request for request, _ in batch])
            except asyncio.CancelledError:
                for _, future in batch:
                    future.cancel()
                raise
            except Exception as exc:
                answers = [exc] * len(batch)
            for (_, future), answer in zip(batch, answers, strict=True):
                if future.done():
                    continue
                if isinstance(answer, BaseException):
                    future.set_exception(answer)
                else:
                    future.set_result(answer)
