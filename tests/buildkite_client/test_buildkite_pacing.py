"""Through the real client and a scripted Buildkite: a burst beyond the token's
requests per minute waits its turn, and none fails."""

from __future__ import annotations

import asyncio

from bot.buildkite.transport import DEFAULT_REQUESTS_PER_MINUTE

from ..github_client.github_fakes import FakeClock
from .buildkite_fakes import PIPELINE, FakeBuildkite, MakeClient, json_answer
from .conftest import START


async def test_a_burst_beyond_the_budget_waits_a_minute(
    make_client: MakeClient, fake_buildkite: FakeBuildkite, clock: FakeClock
) -> None:
    fake_buildkite.answer("GET", PIPELINE + "/builds/7", json_answer({"number": 7, "jobs": []}))
    client = make_client()
    builds = await asyncio.gather(*(client.build("vllm", "ci", 7) for _ in range(60)))
    assert len(builds) == 60
    assert client.requests_made == 60
    assert DEFAULT_REQUESTS_PER_MINUTE == 50
    assert 60.0 <= clock() - START < 120.0


async def test_the_budget_is_configurable(
    make_client: MakeClient, fake_buildkite: FakeBuildkite, clock: FakeClock
) -> None:
    fake_buildkite.answer("GET", PIPELINE + "/builds/7", json_answer({"number": 7, "jobs": []}))
    client = make_client(requests_per_minute=200)
    await asyncio.gather(*(client.build("vllm", "ci", 7) for _ in range(150)))
    assert clock() == START
