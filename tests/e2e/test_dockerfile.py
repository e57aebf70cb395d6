"""The image's health check asks the port the service listens on (no Docker engine here,
so the check's own command is run against a served bot)."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit

from sandbox.harness import Harness

DOCKERFILE = Path(__file__).resolve().parents[2] / "deploy" / "Dockerfile"


def instructions() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", "", DOCKERFILE.read_text())
    return [line for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def healthcheck_code() -> str:
    [line] = [i for i in instructions() if i.startswith("HEALTHCHECK CMD ")]
    words = shlex.split(line.removeprefix("HEALTHCHECK CMD "))
    assert words[:2] == ["python", "-c"]
    return words[2]


async def run_check(port: int) -> int:
    env = {**os.environ, "FOLLOWUP_BOT_PORT": str(port)}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", healthcheck_code(), env=env)
    return await proc.wait()


async def test_the_health_check_follows_the_configured_port(env: Harness) -> None:
    await env.start()
    port = urlsplit(env.running.webhook_url).port
    assert port is not None

    assert await run_check(port) == 0
    assert await run_check(1) != 0  # nothing listens there: the check fails


def test_the_cache_directory_is_on_the_volume() -> None:
    lines = instructions()
    assert any("FOLLOWUP_BOT_CACHE_DIR=/var/lib/followup-bot/cache" in line for line in lines)
    assert "VOLUME /var/lib/followup-bot" in lines
    assert any("chown -R followup-bot /var/lib/followup-bot" in line for line in lines)
