"""Pacing: requests wait for their turn so the bot stays under its peers' limits.

GitHub's secondary rate limits (no more than 100 concurrent requests; no more
than 80 content-creating requests a minute and 500 an hour) and Buildkite's
requests per minute per token are cheaper to respect than to recover from: a
refused request costs a retry-after wait and, for a write that is not safe to
repeat, a look for its effect. So each client sends through a ``Pacer``, and
a burst of work waits (never fails) until the limits allow it.

``TokenBucket`` is a sliding-window bucket: a spent token comes back ``per``
seconds after the work it paid for finished. A classic bucket that refills
continuously lets ``2 * rate`` through in some window of ``per`` seconds (a
full bucket, then its refill); GitHub counts requests in any such window, so
here at most ``rate`` are sent in any ``per`` seconds, whatever the timing.

Every wait goes through an injected ``sleep`` and every reading of the time
through an injected ``clock``, so tests and benchmarks run on virtual time.

Part of the foundation (see docs/architecture.md): it imports nothing of the bot.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

BAD_RATE = "a bucket needs a rate of at least 1 per period, got {rate!r}"
BAD_PERIOD = "a bucket's period must be a finite number of seconds above 0, got {per!r}"
BAD_CONCURRENCY = "the concurrency cap must be at least 1, got {limit!r}"


class TokenBucket:
    """At most ``rate`` tokens spent in any window of ``per`` seconds; takers wait in turn.

    ``rate`` is rounded down to whole tokens (a token is one request). Takers
    are served first come, first served: one waits at the head (sleeping until
    the oldest token comes back) while the rest queue behind it on a lock,
    which asyncio hands over in arrival order.
    """

    def __init__(self, rate: float, per: float, *, clock: Clock, sleep: Sleep) -> None:
        if not (math.isfinite(rate) and rate >= 1):
            raise ValueError(BAD_RATE.format(rate=rate))
        if not (math.isfinite(per) and per > 0):
            raise ValueError(BAD_PERIOD.format(per=per))
        self.capacity = int(rate)
        self.per = float(per)
        self._clock = clock
        self._sleep = sleep
        # When each spent token comes back, oldest first (the clock never goes back).
        self._returns: deque[float] = deque()
        # Tokens held by work still running: they come back `per` after it ends.
        self._held = 0
        self._handed_back = asyncio.Event()
        self._turn = asyncio.Lock()
        self.waited_seconds = 0.0
        self.waits = 0

    async def acquire(self) -> None:
        """Spend a token now (waiting for one if none is free); it comes back in ``per`` s."""
        await self.take()
        self.give_back()

    async def take(self) -> bool:
        """Hold a token until ``give_back``; whether the caller had to wait for it."""
        start = self._clock()
        waited = self._turn.locked()
        async with self._turn:
            while not self._free(self._clock()):
                waited = True
                if self._returns:
                    await self._sleep(max(0.0, self._returns[0] - self._clock()))
                else:  # every token is held by running work: wait for one to end
                    self._handed_back.clear()
                    await self._handed_back.wait()
            self._held += 1
        if waited:
            self.waits += 1
            self.waited_seconds += self._clock() - start
        return waited

    def give_back(self) -> None:
        """The work a token paid for is over: the token is free again ``per`` s from now."""
        self._held -= 1
        self._returns.append(self._clock() + self.per)
        self._handed_back.set()

    @property
    def spent(self) -> int:
        """Tokens held by running work or not back yet, as of now."""
        self._free(self._clock())
        return self._held + len(self._returns)

    def _free(self, now: float) -> bool:
        while self._returns and self._returns[0] <= now:
            self._returns.popleft()
        return self._held + len(self._returns) < self.capacity


class Pacer:
    """A concurrency cap and rate buckets, taken around each request a client sends.

    ``all_buckets`` pace every request, ``write_buckets`` only writes, so a
    backlog of writes never holds up reads. Buckets are taken before the
    concurrency slot: work waiting for its turn holds no slot a read could use.
    """

    def __init__(
        self,
        *,
        concurrency: int | None,
        all_buckets: Sequence[TokenBucket] = (),
        write_buckets: Sequence[TokenBucket] = (),
        clock: Clock = time.monotonic,
    ) -> None:
        if concurrency is not None and concurrency < 1:
            raise ValueError(BAD_CONCURRENCY.format(limit=concurrency))
        self.concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency) if concurrency is not None else None
        self.all_buckets = tuple(all_buckets)
        self.write_buckets = tuple(write_buckets)
        self._clock = clock
        self.in_flight = 0
        self.most_in_flight = 0
        self.slots = 0
        self.waits = 0
        self.waited_seconds = 0.0

    @classmethod
    def unpaced(cls) -> Pacer:
        """No cap and no buckets: every request goes at once (benchmarks' baseline)."""
        return cls(concurrency=None)

    @asynccontextmanager
    async def slot(self, *, write: bool) -> AsyncIterator[None]:
        """Wait for the buckets that apply and a free slot; hold them while the body runs."""
        start = self._clock()
        waited = False
        taken: list[TokenBucket] = []
        try:
            for bucket in self.all_buckets + (self.write_buckets if write else ()):
                waited |= await bucket.take()
                taken.append(bucket)
            if self._slots is not None:
                waited |= self._slots.locked()
                await self._slots.acquire()
            try:
                self._count(waited, start)
                yield
            finally:
                self.in_flight -= 1
                if self._slots is not None:
                    self._slots.release()
        finally:
            for bucket in taken:
                bucket.give_back()

    def _count(self, waited: bool, start: float) -> None:
        self.slots += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        if waited:
            self.waits += 1
            self.waited_seconds += self._clock() - start
