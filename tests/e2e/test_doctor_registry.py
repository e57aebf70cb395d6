"""``followup-bot doctor``'s registry check against a real registry (token auth)."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

from bot.doctor import fixes
from bot.doctor.registry_check import CHECK_REGISTRY
from bot.doctor.result import FAIL, OK, CheckResult
from bot.doctor.run import run_checks
from sandbox.oci_registry import RegistryServer
from sandbox.vllm_shapes import DOWNSTREAM
from tests.e2e.conftest import registry_world

REGISTRY = CHECK_REGISTRY.format(repo=DOWNSTREAM)


def by_check(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.check: result for result in results}


async def test_the_registry_takes_the_configured_credentials(
    tmp_path: Path, registry: RegistryServer
) -> None:
    async with registry_world(tmp_path, registry, "") as world:
        settings = world.env.settings
        found = by_check(await run_checks(settings))[REGISTRY]
        assert found.status == OK, found
        assert "configured user" in found.detail
        asked = registry.token_requests

        wrong = replace(settings, registry_password="not-the-password")
        refused = by_check(await run_checks(wrong))[REGISTRY]
        assert (refused.status, refused.fix) == (FAIL, fixes.FIX_REGISTRY_CREDENTIALS)
        assert "not-the-password" not in refused.detail + refused.fix
        assert registry.token_requests == asked + 1

        anonymous = replace(settings, registry_username=None, registry_password=None)
        assert by_check(await run_checks(anonymous))[REGISTRY].status == FAIL


async def test_a_registry_that_does_not_answer(tmp_path: Path, registry: RegistryServer) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    gone = replace(registry, url=closed)
    async with registry_world(tmp_path, gone, "") as world:
        found = by_check(await run_checks(world.env.settings))[REGISTRY]
    assert found.status == FAIL
    assert found.fix == fixes.FIX_REGISTRY_UNREACHABLE.format(repo=DOWNSTREAM)
