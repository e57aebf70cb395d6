"""``followup-bot serve`` as a process of its own, for tests and benchmarks: its
environment against the stand-ins, started (forked from the fork server, or from the
command line) and stopped with SIGKILL when the context ends."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sandbox.harness import Harness, app_key
from sandbox.serve_forks import FORKS, ForkedProcess

READY_MARK = b"Running on"
START_TIMEOUT = 30.0
EXITED_EARLY = "serve exited before it was ready:\n{output}"
# A served bot: started from the command line, or forked from the fork server.
Served = asyncio.subprocess.Process | ForkedProcess


def serve_env(env: Harness, workdir: Path, port: int) -> dict[str, str]:
    """The environment of a ``serve`` against ``env``'s stand-ins, on a SQLite file in
    ``workdir`` (callers override what they need, the database among it)."""
    key_file = workdir / "app.pem"
    key_file.write_text(app_key()[0])
    return {
        "PATH": os.environ.get("PATH", ""),
        "FOLLOWUP_BOT_WEBHOOK_SECRET": env.settings.webhook_secret,
        "FOLLOWUP_BOT_APP_ID": env.settings.app_id,
        "FOLLOWUP_BOT_PRIVATE_KEY_FILE": str(key_file),
        "FOLLOWUP_BOT_REPOSITORIES": ",".join(env.settings.repositories),
        "FOLLOWUP_BOT_GITHUB_API_URL": env.sandbox.base_url,
        "FOLLOWUP_BOT_DATABASE": str(workdir / "serve.sqlite3"),
        "FOLLOWUP_BOT_PORT": str(port),
        "FOLLOWUP_BOT_RECONCILE_INTERVAL": "0",
        "PYTHONUNBUFFERED": "1",
    }


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
                if not line:
                    raise RuntimeError(EXITED_EARLY.format(output=output.decode()))
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
