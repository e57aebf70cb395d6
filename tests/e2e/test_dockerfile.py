"""The image: its health check asks the port the service listens on (no Docker engine here,
so the check's own command is run against a served bot), it installs the locked, hashed
runtime dependencies and then the project alone, and it copies the runtime packages only."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

from sandbox.harness import Harness

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"


def instructions() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", "", DOCKERFILE.read_text())
    return [line for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def healthcheck_code() -> str:
    [line] = [i for i in instructions() if i.startswith("HEALTHCHECK ")]
    # Options (interval, timeout, ...) come before CMD; the command is what runs.
    words = shlex.split(line.split(" CMD ", 1)[1])
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
    assert any("chown -R 10001:10001 /var/lib/followup-bot" in line for line in lines)


def words_of(prefix: str) -> list[list[str]]:
    """The words of every instruction starting with ``prefix``, in order."""
    return [shlex.split(i) for i in instructions() if i.startswith(prefix)]


def test_the_image_installs_the_locked_dependencies_then_the_project_alone() -> None:
    [locked, project] = words_of("RUN pip install ")
    assert "--require-hashes" in locked
    assert locked[locked.index("-r") + 1] == "requirements.lock"
    assert (ROOT / "requirements.lock").is_file()
    assert "--no-deps" in project
    assert project[-1] == "."


def test_the_image_copies_the_runtime_packages_and_nothing_else() -> None:
    lines = instructions()
    copied = [source for words in words_of("COPY ") for source in words[1:-1]]
    assert all((ROOT / source).exists() for source in copied), copied
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = {pattern.rstrip("*").rstrip(".") for pattern in find["packages"]["find"]["include"]}
    assert packages == {"bot", "handlers"}
    assert packages <= set(copied)
    assert "sandbox" not in copied  # a distribution of its own: no part of the image
    # The lock is in place before the install that reads it.
    copy_lock = next(n for n, line in enumerate(lines) if line.startswith("COPY requirements.lock"))
    install = next(n for n, line in enumerate(lines) if "--require-hashes" in line)
    assert copy_lock < install
