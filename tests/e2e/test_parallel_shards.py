"""A `parallelism: N` step is N shards under one step key: history compares shard with shard."""

from __future__ import annotations

import dataclasses

from sandbox.buildkite_state import JobSpec
from sandbox.harness import Harness
from tests.e2e.test_retry_flaky import (
    BROKEN,
    MAINTAINER,
    ask,
    main_build,
    pr_build,
    retried,
    row,
    seed_pr,
    sticky,
)

SHARD_0_FAILS = dataclasses.replace(BROKEN, name="Kernels MoE 1/2", parallel=(0, 2))
SHARD_1_PASSES = JobSpec("kernels", "Kernels MoE 2/2", parallel=(1, 2))


async def test_one_shard_failing_on_main_is_broken_trunk_not_flaky(ci_env: Harness) -> None:
    env = ci_env
    number, head = seed_pr(env)
    # main: shard 0 fails the same way, shard 1 passes, in the same build
    main_build(env, SHARD_0_FAILS, SHARD_1_PASSES)
    pr_build(env, number, head, SHARD_0_FAILS, SHARD_1_PASSES)
    await env.start()

    await ask(env, number, MAINTAINER)

    # shard 0 fails on main too: the trunk is broken; shard 1's pass is no "retry" of it
    assert "| broken-trunk |" in row(sticky(env, number), "Kernels MoE 1/2")
    assert retried(env) == []
