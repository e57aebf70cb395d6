"""The fork server: each start is a process of its own with exactly the given environment."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from bot.cli.discover import EXIT_USAGE
from bot.cli.main import version
from bot.github.auth import signing_key
from sandbox.harness import app_key
from sandbox.ports import free_port
from sandbox.serve_forks import (
    FORKS,
    ForkedProcess,
    load_app_key,
)

ENV = {"PATH": os.environ.get("PATH", "")}
KEY, KEY_FILE = "FOLLOWUP_BOT_PRIVATE_KEY", "FOLLOWUP_BOT_PRIVATE_KEY_FILE"


async def output(process: ForkedProcess) -> bytes:
    async with asyncio.timeout(30):
        text = await process.stdout.read()
        await process.wait()
    return text


async def test_a_command_runs_in_its_own_process_and_reports_its_exit_code() -> None:
    process = await FORKS.start(["--version"], ENV)
    assert process.pid != os.getpid()
    assert (await output(process)).decode().split() == ["followup-bot", version()]
    assert process.returncode == 0


async def test_the_process_sees_only_the_environment_it_was_given() -> None:
    process = await FORKS.start(["serve"], ENV)  # no secrets: serve refuses to start
    text = (await output(process)).decode()
    assert process.returncode == EXIT_USAGE
    assert "refusing to start" in text
    assert "FOLLOWUP_BOT_WEBHOOK_SECRET" in text


async def test_killed_is_reported_as_the_signal_and_killing_twice_is_harmless(
    tmp_path: Path,
) -> None:
    key = tmp_path / "app.pem"
    key.write_text(app_key()[0])
    process = await FORKS.start(
        ["serve"],
        {
            **ENV,
            "FOLLOWUP_BOT_WEBHOOK_SECRET": "secret",
            "FOLLOWUP_BOT_APP_ID": "1",
            "FOLLOWUP_BOT_PRIVATE_KEY_FILE": str(key),
            "FOLLOWUP_BOT_DATABASE": str(tmp_path / "bot.sqlite3"),
            "FOLLOWUP_BOT_PORT": str(free_port()),
            "FOLLOWUP_BOT_RECONCILE_INTERVAL": "0",
            "FOLLOWUP_BOT_REPOSITORIES": "octo/repo",
        },
    )
    seen = b""
    async with asyncio.timeout(30):
        while b"Running on" not in seen:
            line = await process.stdout.readline()
            assert line, seen.decode()
            seen += line
    process.kill()
    await output(process)
    assert process.returncode == -signal.SIGKILL
    process.kill()
    assert await process.wait() == -signal.SIGKILL


async def test_starts_from_several_event_loops_share_one_fork_server() -> None:
    first = await FORKS.start(["--version"], ENV)
    second = await FORKS.start(["--version"], ENV)
    assert first.pid != second.pid
    await asyncio.gather(output(first), output(second))
    assert (first.returncode, second.returncode) == (0, 0)


def test_the_app_key_is_loaded_once_for_every_child_and_a_bad_one_is_left_to_them(
    tmp_path: Path,
) -> None:
    good, bad = tmp_path / "app.pem", tmp_path / "bad.pem"
    good.write_text(app_key()[0])
    bad.write_text("-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n")
    signing_key.cache_clear()

    load_app_key({KEY_FILE: str(good)})
    load_app_key({KEY: app_key()[0]})  # the same key given inline
    load_app_key({KEY_FILE: str(bad)})
    load_app_key({KEY_FILE: str(tmp_path / "missing.pem")})
    load_app_key({})

    info = signing_key.cache_info()
    assert (info.currsize, info.hits) == (1, 1)  # only the good key, checked once


async def test_a_child_given_a_bad_key_still_starts_and_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n")
    process = await FORKS.start(["--version"], {**ENV, KEY_FILE: str(bad)})
    assert (await output(process)).decode().split() == ["followup-bot", version()]
    assert process.returncode == 0
