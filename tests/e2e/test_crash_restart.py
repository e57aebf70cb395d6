"""A delivery that got 202 is never lost: ``followup-bot serve`` killed with SIGKILL, restarted."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bot.pins import text as bump_text
from sandbox.harness import Harness, app_key
from sandbox.ports import free_port
from sandbox.serve_forks import FORKS, ForkedProcess
from sandbox.vllm_shapes import DOWNSTREAM, PIN_FILE, UPSTREAM
from tests.e2e.conftest import seed

READY_MARK = b"Running on"
# A served bot: started from the command line, or forked from the fork server.
Served = asyncio.subprocess.Process | ForkedProcess
START_TIMEOUT = 30.0
PR_TIMEOUT = 60.0


@asynccontextmanager
async def serve(env: dict[str, str], *, command_line: bool = False) -> AsyncIterator[Served]:
    """``followup-bot serve`` as a process of its own, up until the context ends (killed).

    Forked from the pre-imported fork server (``sandbox.serve_forks``), ~0.9 s of
    imports less per start; ``command_line`` starts ``python -m bot.cli.main`` instead.
    """
    proc: Served
    if command_line:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "serve",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
    else:
        proc = await FORKS.start(["serve"], env)
    assert proc.stdout is not None
    output = b""
    try:
        async with asyncio.timeout(START_TIMEOUT):
            while READY_MARK not in output:
                line = await proc.stdout.readline()
                assert line, f"serve exited early:\n{output.decode()}"
                output += line
        # keep draining so the child never blocks on a full pipe
        drain = asyncio.create_task(_drain(proc.stdout))
        try:
            yield proc
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
            await drain
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


def child_env(env: Harness, tmp_path: Path, port: int) -> dict[str, str]:
    private_key, _ = app_key()
    key_file = tmp_path / "app.pem"
    key_file.write_text(private_key)
    return {
        "PATH": os.environ.get("PATH", ""),
        "FOLLOWUP_BOT_WEBHOOK_SECRET": env.settings.webhook_secret,
        "FOLLOWUP_BOT_APP_ID": env.settings.app_id,
        "FOLLOWUP_BOT_PRIVATE_KEY_FILE": str(key_file),
        "FOLLOWUP_BOT_REPOSITORIES": DOWNSTREAM,
        "FOLLOWUP_BOT_GITHUB_API_URL": env.sandbox.base_url,
        "FOLLOWUP_BOT_DATABASE": str(tmp_path / "serve.sqlite3"),
        "FOLLOWUP_BOT_PORT": str(port),
        "FOLLOWUP_BOT_RECONCILE_INTERVAL": "0",
        "PYTHONUNBUFFERED": "1",
    }


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
    child = child_env(env, tmp_path, port)
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
