"""Two ``followup-bot serve`` processes on one database: the second refuses to start.

Real processes, because the lock is the kernel's: the first keeps serving, and
once it is SIGKILLed (no cleanup at all) a new one starts on the same file.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import aiohttp

from bot.cli.serve import REFUSING_TO_START
from bot.store.sqlite import DATABASE_IN_USE
from sandbox.harness import app_key
from sandbox.ports import free_port
from sandbox.served import serve
from tests.core.helpers import SECRET

# Safety net only: a broken child fails the test instead of hanging it.
SAFETY = 60.0


def serve_env(tmp_path: Path, database: Path, port: int) -> dict[str, str]:
    key_file = tmp_path / "app.pem"
    key_file.write_text(app_key()[0])
    return {
        "PATH": os.environ.get("PATH", ""),
        "FOLLOWUP_BOT_WEBHOOK_SECRET": SECRET.decode(),
        "FOLLOWUP_BOT_APP_ID": "1",
        "FOLLOWUP_BOT_PRIVATE_KEY_FILE": str(key_file),
        "FOLLOWUP_BOT_DATABASE": str(database),
        "FOLLOWUP_BOT_REPOSITORIES": "vllm-project/vllm",
        "FOLLOWUP_BOT_PORT": str(port),
        "FOLLOWUP_BOT_RECONCILE_INTERVAL": "0",
        "PYTHONUNBUFFERED": "1",
    }


async def healthy(port: int) -> bool:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/healthz") as response,
    ):
        return response.status == 200


async def test_a_second_serve_on_the_same_database_refuses_to_start(tmp_path: Path) -> None:
    database = tmp_path / "serve.sqlite3"
    first_port = free_port()
    async with serve(serve_env(tmp_path, database, first_port)) as first:
        second = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "serve",
            env=serve_env(tmp_path, database, free_port()),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(second.communicate(), SAFETY)
        reason = DATABASE_IN_USE.format(database=database, lock=f"{database}.lock")
        assert second.returncode == 2
        assert err.decode() == REFUSING_TO_START.format(reason=reason) + "\n"
        assert b"Running on" not in out

        assert await healthy(first_port)  # the first one keeps serving
        first.kill()  # SIGKILL: the kernel drops its lock with the process
        await first.wait()

    third_port = free_port()
    async with serve(serve_env(tmp_path, database, third_port)):
        assert await healthy(third_port)
