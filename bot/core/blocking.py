"""Run synchronous work (SQLite, git, file parsing) off the event loop.

The pool is bounded so a burst of deliveries cannot start hundreds of threads,
and every call has a timeout so a stuck call cannot hold a worker forever. A
thread cannot be killed: on timeout the caller stops waiting and the thread
finishes in the background, which is why callers keep each call short.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0


class BlockingRunner:
    """A bounded thread pool whose calls are awaited with a timeout."""

    def __init__(self, max_workers: int = 4, timeout: float = DEFAULT_TIMEOUT) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="blocking")
        self.timeout = timeout

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(*args, **kwargs)`` in the pool; ``TimeoutError`` after ``timeout``."""
        return await self.run_for(self.timeout, fn, *args, **kwargs)

    async def run_for(
        self, seconds: float, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Like ``run`` with its own timeout, for the few calls known to take long."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
        # that arrives together with the result, which hangs shutdown.
        async with asyncio.timeout(seconds):
            return await future

    def close(self, *, wait: bool = True) -> None:
        """Stop the pool; ``wait=False`` on the event loop, which must not wait for a join."""
        self._pool.shutdown(wait=wait, cancel_futures=True)
