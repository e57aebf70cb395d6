"""The pacing laws: a bucket's window, the concurrency cap, first come first served,
and reads never held up by writes. All on virtual time: nothing here sleeps."""

from __future__ import annotations

import asyncio
import heapq
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.pacing import Pacer, TokenBucket


class InstantClock:
    """Virtual time that a sleep advances at once (one sleeper at a time per bucket)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


class ManualClock:
    """Virtual time that moves only when the test says: sleepers wake as it passes them."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), wake))
        await wake

    async def advance_to(self, moment: float) -> None:
        while self._sleepers and self._sleepers[0][0] <= moment:
            when, _, wake = heapq.heappop(self._sleepers)
            self.now = max(self.now, when)
            wake.set_result(None)
            await settle()
        self.now = max(self.now, moment)
        await settle()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def assert_window_law(times: list[float], capacity: int, per: float) -> None:
    """No ``capacity + 1`` completions within less than ``per`` seconds."""
    ordered = sorted(times)
    for first, later in zip(ordered, ordered[capacity:], strict=False):
        assert later >= first + per


@settings(max_examples=150, deadline=None)
@given(
    rate=st.integers(min_value=1, max_value=8),
    per=st.floats(min_value=0.5, max_value=120.0),
    steps=st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=30.0),  # gap before the next arrivals
            st.integers(min_value=1, max_value=6),  # how many arrive together
            st.floats(min_value=0.0, max_value=5.0),  # how long each holds its token
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_at_most_rate_acquisitions_in_any_window_of_per_seconds(
    rate: int, per: float, steps: list[tuple[float, int, float]]
) -> None:
    async def run() -> list[float]:
        clock = InstantClock()
        bucket = TokenBucket(rate, per, clock=clock, sleep=clock.sleep)
        times: list[float] = []

        async def one(hold: float) -> None:
            await bucket.take()
            times.append(clock())
            await clock.sleep(hold)
            bucket.give_back()

        tasks = []
        for gap, arrivals, hold in steps:
            await clock.sleep(gap)
            tasks += [asyncio.create_task(one(hold)) for _ in range(arrivals)]
        await asyncio.gather(*tasks)
        return times

    times = asyncio.run(run())
    assert len(times) == sum(arrivals for _, arrivals, _ in steps)
    assert_window_law(times, rate, per)


async def test_a_burst_is_spread_one_window_per_capacity() -> None:
    clock = InstantClock()
    bucket = TokenBucket(80, 60.0, clock=clock, sleep=clock.sleep)
    await asyncio.gather(*(bucket.acquire() for _ in range(200)))
    # 80 at once, 80 a minute later, the last 40 two minutes in.
    assert clock() == 120.0
    assert bucket.waits == 120


async def test_a_token_comes_back_per_seconds_after_its_work_ends() -> None:
    clock = ManualClock()
    bucket = TokenBucket(1, 10.0, clock=clock, sleep=clock.sleep)
    await bucket.take()
    second = asyncio.create_task(bucket.acquire())
    await clock.advance_to(30.0)  # the first holder is still at work: no token returns
    assert not second.done()
    bucket.give_back()
    await clock.advance_to(39.9)
    assert not second.done()
    await clock.advance_to(40.0)
    assert second.done()


async def test_waiters_are_served_in_arrival_order() -> None:
    clock = ManualClock()
    bucket = TokenBucket(2, 10.0, clock=clock, sleep=clock.sleep)
    served: list[int] = []

    async def one(n: int) -> None:
        await bucket.acquire()
        served.append(n)

    tasks = []
    for n in range(9):
        tasks.append(asyncio.create_task(one(n)))
        await settle()
    for moment in range(10, 60, 10):
        await clock.advance_to(moment)
    await asyncio.gather(*tasks)
    assert served == list(range(9))


async def test_the_concurrency_cap_is_never_exceeded() -> None:
    pacer = Pacer(concurrency=3)
    running = 0
    most = 0

    async def one(n: int) -> None:
        nonlocal running, most
        async with pacer.slot(write=n % 2 == 0):
            running += 1
            most = max(most, running)
            for _ in range(n % 4 + 1):
                await asyncio.sleep(0)
            running -= 1

    await asyncio.gather(*(one(n) for n in range(40)))
    assert most == pacer.most_in_flight == 3
    assert pacer.slots == 40
    assert pacer.waits > 0


async def test_writes_waiting_for_their_bucket_do_not_hold_up_reads() -> None:
    clock = ManualClock()
    writes_bucket = TokenBucket(2, 60.0, clock=clock, sleep=clock.sleep)
    pacer = Pacer(concurrency=2, write_buckets=(writes_bucket,), clock=clock)
    done: list[str] = []

    async def request(kind: str) -> None:
        async with pacer.slot(write=kind == "write"):
            await asyncio.sleep(0)
        done.append(kind)

    writes = [asyncio.create_task(request("write")) for _ in range(6)]
    await settle()
    reads = [asyncio.create_task(request("read")) for _ in range(10)]
    await asyncio.gather(*reads)
    assert clock() == 0.0
    assert done.count("write") == 2
    assert done.count("read") == 10
    await clock.advance_to(180.0)
    await asyncio.gather(*writes)
    assert done.count("write") == 6
    assert writes_bucket.waits == 4
    assert writes_bucket.waited_seconds == pytest.approx(60.0 + 60.0 + 120.0 + 120.0)


def test_nonsense_limits_are_refused() -> None:
    clock = InstantClock()
    with pytest.raises(ValueError, match="rate"):
        TokenBucket(0.5, 60.0, clock=clock, sleep=clock.sleep)
    with pytest.raises(ValueError, match="period"):
        TokenBucket(10, 0.0, clock=clock, sleep=clock.sleep)
    with pytest.raises(ValueError, match="concurrency"):
        Pacer(concurrency=0)
