"""A real ``followup-bot serve`` killed between two writes finishes its own work.

The GitHub stand-in applies a chosen write, then SIGKILLs the bot before it
can answer. The restarted bot must recognise the half-done bump as its own and
roll it forward: one PR, each upstream target pushed once, no "someone else
pushed" notice.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bot.sandbox.harness import Harness
from tests.e2e.conftest import seed
from tests.e2e.test_bump_faults import assert_exactly_once, branch_pushes
from tests.e2e.test_bump_flow import merge_upstream
from tests.e2e.test_crash_restart import child_env, free_port, serve

QUIET_TIMEOUT = 60.0
CREATE_PHASE = ["git/create-blob", "git/create-tree", "git/create-commit", "git/create-ref"]
PR_PHASE = ["pulls/create"]
UPDATE_PHASE = ["git/update-ref", "pulls/update"]


def _unfinished(database: Path) -> int:
    if not database.exists():
        return -1
    with sqlite3.connect(database, timeout=5.0) as conn:
        row = conn.execute(
            "SELECT count(*) FROM deliveries WHERE status IN ('queued', 'running')"
        ).fetchone()
    return int(row[0])


async def wait_quiet(env: Harness, database: Path) -> None:
    """Until the bot has nothing left to do and GitHub has nothing left to say."""
    async with asyncio.timeout(QUIET_TIMEOUT):
        quiet_rounds = 0
        while quiet_rounds < 3:
            seen = len(env.sandbox.requests), len(env.sandbox.deliveries)
            await env.sandbox.flush()
            idle = await asyncio.to_thread(_unfinished, database) == 0
            now = len(env.sandbox.requests), len(env.sandbox.deliveries)
            quiet_rounds = quiet_rounds + 1 if idle and now == seen else 0
            await asyncio.sleep(0.1)  # polling another process; not a timing assertion


async def redeliver_missed(env: Harness) -> None:
    """Webhooks the dead bot could not take, redelivered as GitHub lets one do."""
    missed = [d for d in env.sandbox.deliveries if d.status != 202]
    for delivery in missed:
        await env.sandbox.deliver(
            delivery.event, delivery.payload, delivery_id=delivery.delivery_id
        )


async def crash_on(
    env: Harness, variables: dict[str, str], operation: str, act: Callable[[], Awaitable[str]]
) -> str:
    """Run ``act`` with the bot killed right after GitHub applies ``operation``; restart it
    and wait until it has finished. Returns what ``act`` returned."""
    database = Path(variables["FOLLOWUP_BOT_DATABASE"])
    async with serve(variables) as doomed:
        env.sandbox.faults.crash_after(operation, doomed.kill)
        result = await act()
        async with asyncio.timeout(QUIET_TIMEOUT):
            await doomed.wait()
    assert env.sandbox.faults.injected[-1].kind == "crash"
    async with serve(variables):
        await redeliver_missed(env)
        await wait_quiet(env, database)
    return result


@pytest.mark.parametrize("operation", CREATE_PHASE + PR_PHASE + UPDATE_PHASE)
async def test_killed_between_bump_writes_rolls_forward(
    env: Harness, tmp_path: Path, operation: str
) -> None:
    seed(env)
    port = free_port()
    variables = child_env(env, tmp_path, port)
    env.sandbox.webhook_url = f"http://127.0.0.1:{port}/webhooks/github"

    async def first() -> str:
        return await merge_upstream(env, 1)

    async def second() -> str:
        return await merge_upstream(env, 2)

    if operation in UPDATE_PHASE:
        async with serve(variables):
            await first()
            await wait_quiet(env, Path(variables["FOLLOWUP_BOT_DATABASE"]))
        newest = await crash_on(env, variables, operation, second)
        expected_pushes = 2
    else:
        newest = await crash_on(env, variables, operation, first)
        expected_pushes = 1

    assert_exactly_once(env, newest)
    assert len(branch_pushes(env)) == expected_pushes
