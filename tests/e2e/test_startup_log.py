"""A started service says, once, what it serves."""

from __future__ import annotations

import logging

import pytest

from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM


async def test_start_up_logs_one_summary_line(
    env: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="bot.service.app"):
        await env.start()
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("serving ")]
    assert line.startswith(f"serving {DOWNSTREAM};")
    assert env.settings.webhook_secret not in line
