"""End-to-end fixtures: the GitHub stand-in plus the real bot, per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.abi.log import PASSED
from sandbox.harness import Harness, harness
from sandbox.oci_registry import RegistryServer, running_registry
from sandbox.scenario import World
from sandbox.vllm_ci_tree import vllm_ci_files
from sandbox.vllm_shapes import (
    ABI_CHECK_FILE,
    ALLOWLIST_CONFIG,
    AUDIT_STEP,
    CONFIG,
    DOWNSTREAM,
    FA3_ENTRY,
    PIN_TEMPLATE,
    PIPELINE,
    abi_check,
    stale_line,
)

UPSTREAM_INSTALLATION = 11
DOWNSTREAM_INSTALLATION = 22


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[RegistryServer]:
    """A real OCI registry (Debian's distribution registry) with token auth."""
    async with running_registry(tmp_path / "registry", auth="token") as server:
        yield server


@asynccontextmanager
async def registry_world(
    tmp_path: Path, registry: RegistryServer, more_config: str
) -> AsyncIterator[World]:
    """vLLM's CI tree served by the bot, Buildkite's pipeline and a real registry with its
    credentials; the config checks images there and adds ``more_config``."""
    async with harness(
        tmp_path / "world",
        repositories=(DOWNSTREAM,),
        start=False,
        buildkite=True,
        registry_username=registry.username,
        registry_password=registry.password,
    ) as env:
        w = World(env)
        config = CONFIG + (
            f"buildkite:\n  organization: vllm\n  pipelines: [{PIPELINE}]\n"
            f"images:\n  registry_url: {registry.url}\n{more_config}"
        )
        w.downstream(w.upstream(), config=config, files=vllm_ci_files())
        w.ci.add_pipeline(PIPELINE, repository=f"https://github.com/{DOWNSTREAM}.git")
        await w.start()
        yield w


def seed(env: Harness, *, config: str = CONFIG, pin_template: str = PIN_TEMPLATE) -> str:
    """An upstream with history and a downstream pinning its head; returns the pinned sha."""
    world = World(env)
    pinned = world.upstream(installation_id=UPSTREAM_INSTALLATION)
    world.downstream(
        pinned,
        config=config,
        pin_template=pin_template,
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
    World(env).allowlist(*entries)
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
    audit = World.job(
        AUDIT_STEP,
        name=":nvidia: (L4) Torch Stable ABI Audit",
        state="passed" if passed else "failed",
        log=[*lines, PASSED] if passed else list(lines),
    )
    other = World.job("image-build", name=":docker: Build image")
    return await World(env).build(None, [other, audit], commit=commit, branch=branch)


__all__ = ["ABI_CHECK_FILE", "ALLOWLIST_CONFIG", "abi_check", "stale_line"]
