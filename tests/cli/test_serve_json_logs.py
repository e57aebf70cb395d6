"""``followup-bot serve`` in the JSON format, as a process: from its start to its stop
(SIGTERM) every line it writes is a JSON object with a zoned time, probes are quiet at
INFO, and neither a token in a URL nor an Authorization header reaches the log."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from bot.cli.serve import REFUSING_TO_START
from sandbox.ports import free_port
from sandbox.served import serve as served
from tests.core.helpers import sign

from .test_single_writer_serve import SAFETY, serve_env

URL_TOKEN = "url-token-that-must-not-show"
HEADER_TOKEN = "header-token-that-must-not-show"
ASSIGNED = json.dumps(
    {"action": "assigned", "number": 1, "repository": {"full_name": "vllm-project/vllm"}}
).encode()


async def requests(port: int) -> None:
    base = f"http://127.0.0.1:{port}"
    bearer = {"Authorization": f"Bearer {HEADER_TOKEN}"}
    hook = {
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Delivery": "d-json",
        "X-Hub-Signature-256": sign(ASSIGNED),
        "Content-Type": "application/json",
    }
    async with aiohttp.ClientSession() as session:
        for path in ("/healthz", "/readyz", "/metrics"):
            async with session.get(f"{base}{path}?token={URL_TOKEN}", headers=bearer) as answer:
                assert answer.status == 200, path
        async with session.post(f"{base}/webhooks/github", data=ASSIGNED, headers=hook) as answer:
            assert answer.status == 202
        async with session.get(f"{base}/status?token={URL_TOKEN}", headers=bearer) as answer:
            assert answer.status < 500


async def test_every_line_is_json_and_says_nothing_secret(tmp_path: Path) -> None:
    port = free_port()
    env = serve_env(tmp_path, tmp_path / "serve.sqlite3", port) | {
        "FOLLOWUP_BOT_LOG_FORMAT": "json",
        # Nothing may reach out: no handler wants what the test sends.
        "FOLLOWUP_BOT_GITHUB_API_URL": f"http://127.0.0.1:{free_port()}",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "serve",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    try:
        async with asyncio.timeout(SAFETY):
            seen = b""
            while b"Running on" not in seen:
                chunk = await proc.stderr.readline()
                assert chunk, seen.decode()
                seen += chunk
            await requests(port)
            proc.send_signal(signal.SIGTERM)
            out, rest = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    assert proc.returncode == 0
    assert out == b""
    text = (seen + rest).decode()
    lines: list[dict[str, Any]] = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        assert datetime.fromisoformat(line["asctime"]).utcoffset() == timedelta(0), line
    assert any(line["message"].startswith("Running on http://") for line in lines)
    taken_in = [line for line in lines if "d-json" in line["message"]]
    assert taken_in
    assert {line.get("repository") for line in taken_in} == {"vllm-project/vllm"}
    access = [line["message"] for line in lines if line["name"] == "aiohttp.access"]
    # The status page's; the probes' and the stored webhook's lines are DEBUG.
    assert access
    assert all(" /status" in line for line in access), access
    assert "GET /status?token=***" in access[0]
    assert URL_TOKEN not in text
    assert HEADER_TOKEN not in text


async def test_the_running_line_is_written_at_any_level(tmp_path: Path) -> None:
    # Scripts (the sandbox's, the benches') wait for it, whatever the level they run at.
    env = serve_env(tmp_path, tmp_path / "serve.sqlite3", free_port())
    async with served(env | {"FOLLOWUP_BOT_LOG_LEVEL": "ERROR"}):
        pass  # entered only once "Running on" was written


async def test_a_refusal_to_start_is_json_too(tmp_path: Path) -> None:
    database = tmp_path / "serve.sqlite3"
    async with served(serve_env(tmp_path, database, free_port())):
        second = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "serve",
            env=serve_env(tmp_path, database, free_port()) | {"FOLLOWUP_BOT_LOG_FORMAT": "json"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(second.communicate(), SAFETY)
    assert second.returncode == 2
    assert out == b""
    lines = [json.loads(line) for line in err.decode().splitlines()]
    [refusal] = [line for line in lines if line["levelname"] == "CRITICAL"]
    assert refusal["message"].startswith(REFUSING_TO_START.format(reason=""))
