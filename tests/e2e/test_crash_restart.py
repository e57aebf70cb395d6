"""A delivery that got 202 is never lost: ``followup-bot serve`` killed with SIGKILL, restarted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.pins import text as bump_text
from sandbox.harness import Harness
from sandbox.ports import free_port
from sandbox.served import serve, serve_env
from sandbox.vllm_shapes import DOWNSTREAM, PIN_FILE, UPSTREAM
from tests.e2e.conftest import seed

PR_TIMEOUT = 60.0


async def wait_for_bump_pr(env: Harness) -> dict[str, Any]:
    branch = bump_text.bump_branch("flash-attention")
    async with asyncio.timeout(PR_TIMEOUT):
        while True:
            pulls = [p for p in env.sandbox.pulls(DOWNSTREAM) if p["head"]["ref"] == branch]
            if pulls:
                return pulls[0]
            await asyncio.sleep(0.05)  # polling another process; not a timing assertion


async def test_accepted_delivery_is_processed_after_kill_9(env: Harness, tmp_path: Path) -> None:
    seed(env)
    port = free_port()
    child = serve_env(env, tmp_path, port)
    env.sandbox.webhook_url = f"http://127.0.0.1:{port}/webhooks/github"

    # GitHub's API is down: the bot can accept the webhook but not act on it.
    env.sandbox.faults.outage(503)
    async with serve(child, command_line=True) as first:
        new = await env.sandbox.push_commit(UPSTREAM, {"csrc/a.cu": "// a\n"}, "Change (#190)")
        await env.sandbox.flush()
        assert env.sandbox.deliveries[-1].status == 202
        first.kill()  # SIGKILL: no cleanup, no graceful shutdown
        await first.wait()
    env.sandbox.faults.clear()

    async with serve(child):
        pull = await wait_for_bump_pr(env)

    assert pull["title"].endswith(f"to {new[:7]} (1 commit)")
    pinned_file = env.sandbox.read_file(DOWNSTREAM, pull["head"]["ref"], PIN_FILE)
    assert pinned_file is not None
    assert f"GIT_TAG {new}" in pinned_file
