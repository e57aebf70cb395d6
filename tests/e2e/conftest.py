"""End-to-end fixtures: the GitHub stand-in plus the real bot, per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.demo import CONFIG, DOWNSTREAM, PIN_FILE, PIN_TEMPLATE, UPSTREAM
from bot.sandbox.harness import Harness, harness

UPSTREAM_INSTALLATION = 11
DOWNSTREAM_INSTALLATION = 22


def seed(env: Harness, *, config: str = CONFIG, pin_template: str = PIN_TEMPLATE) -> str:
    """An upstream with history and a downstream pinning its head; returns the pinned sha."""
    sandbox = env.sandbox
    sandbox.create_repo(
        UPSTREAM, files={"README.md": "# fa\n"}, installation_id=UPSTREAM_INSTALLATION
    )
    sandbox.commit(UPSTREAM, {"hopper/api.cpp": "// v1\n"}, "Add hopper API (#160)")
    pinned = sandbox.head(UPSTREAM)
    sandbox.create_repo(
        DOWNSTREAM,
        files={
            PIN_FILE: pin_template.format(sha=pinned),
            ".github/followup-bot.yml": config,
            "README.md": "# vllm\n",
        },
        installation_id=DOWNSTREAM_INSTALLATION,
    )
    return pinned


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Harness]:
    async with harness(tmp_path, repositories=(DOWNSTREAM,), start=False) as h:
        yield h
