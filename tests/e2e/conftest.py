"""End-to-end fixtures: the GitHub stand-in plus the real bot, per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.abi_log import PASSED
from bot.demo import (
    ABI_CHECK_FILE,
    ALLOWLIST_CONFIG,
    AUDIT_STEP,
    CONFIG,
    DOWNSTREAM,
    FA3_ENTRY,
    PIN_FILE,
    PIN_TEMPLATE,
    PIPELINE,
    UPSTREAM,
    abi_check,
    buildkite_log,
    stale_line,
)
from bot.sandbox.buildkite_state import JobSpec
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


@pytest.fixture
async def ci_env(tmp_path: Path) -> AsyncIterator[Harness]:
    """GitHub and Buildkite stand-ins, the bot not started yet."""
    async with harness(tmp_path, repositories=(DOWNSTREAM,), start=False, buildkite=True) as h:
        yield h


FA3 = FA3_ENTRY
DEEP_GEMM = "third_party/deep_gemm/_C*.so"
ROCM = "_rocm_C.abi3.so"


def seed_allowlist(env: Harness, *entries: str) -> str:
    """``seed`` plus the audit allowlist and the Buildkite pipeline; returns the pinned sha."""
    pinned = seed(env, config=CONFIG + ALLOWLIST_CONFIG)
    env.sandbox.commit(DOWNSTREAM, {ABI_CHECK_FILE: abi_check(*entries)}, "Add the ABI audit")
    env.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
    return pinned


def outside_line(*paths: str) -> str:
    return "Not allowed: torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: " + ", ".join(
        sorted(paths)
    )


async def audit_build(
    env: Harness, *, branch: str, commit: str, lines: tuple[str, ...], passed: bool = False
) -> int:
    """CI runs on ``commit``: a finished build whose audit job printed ``lines``
    (a passing audit prints the success line), and the bot has acted on it."""
    number = await finish_audit_build(env, branch=branch, commit=commit, lines=lines, passed=passed)
    await env.settle()
    return number


async def finish_audit_build(
    env: Harness, *, branch: str, commit: str, lines: tuple[str, ...], passed: bool = False
) -> int:
    """``audit_build`` up to Buildkite's webhooks (whoever serves the bot)."""
    if passed:
        lines = (*lines, PASSED)
    audit = JobSpec(
        step_key=AUDIT_STEP,
        name=":nvidia: (L4) Torch Stable ABI Audit",
        state="passed" if passed else "failed",
        exit_status=0 if passed else 1,
        log=buildkite_log(*lines),
    )
    other = JobSpec(step_key="image-build", name=":docker: Build image")
    build = env.ci.create_build(PIPELINE, commit=commit, branch=branch, jobs=[other, audit])
    await env.ci.finish_build(PIPELINE, int(build["number"]))
    await env.ci.flush()
    return int(build["number"])


__all__ = ["ABI_CHECK_FILE", "ALLOWLIST_CONFIG", "abi_check", "stale_line"]
