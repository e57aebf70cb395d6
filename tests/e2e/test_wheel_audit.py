"""The bot's own audit of main's wheel: it tells a stale entry to delete from one to narrow."""

from __future__ import annotations

import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.allowlist import text as allowlist_text
from bot.service.reconcile import enqueue_tick
from sandbox.harness import Harness, harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM
from tests.abi.fakelibs import FakeLibraries, Kind, build_fake_libraries
from tests.e2e.conftest import ABI_CHECK_FILE, ALLOWLIST_CONFIG, FA3, ROCM, abi_check, seed
from tests.e2e.test_allowlist_flow import entries, open_pulls
from tests.e2e.test_bump_flow import writes

MIXED = "vllm_flash_attn/*"
DEEP_GEMM = "third_party/deep_gemm/_C*.so"
LAYOUT: dict[str, Kind] = {
    "vllm_flash_attn/_vllm_fa3_C.abi3.so": "stable",
    "vllm_flash_attn/_vllm_fa2_C.abi3.so": "unstable",
    "third_party/deep_gemm/_C.cpython-312-x86_64-linux-gnu.so": "unstable",
    "_C.abi3.so": "stable",
}


@pytest.fixture(scope="session")
def libs(tmp_path_factory: pytest.TempPathFactory) -> FakeLibraries:
    # A missing g++ fails here with the install command (make test installs it).
    return build_fake_libraries(tmp_path_factory.mktemp("e2e-libs"))


def make_wheel(libs: FakeLibraries, tmp: Path) -> bytes:
    package = libs.package(tmp / "unpacked" / "vllm", LAYOUT)
    wheel = tmp / "vllm.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(package.rglob("*.so")):
            archive.write(path, f"vllm/{path.relative_to(package)}")
        archive.writestr("vllm/__init__.py", "")
        archive.writestr("vllm-0.0.1.dist-info/METADATA", "Name: vllm\n")
    return wheel.read_bytes()


class WheelServer:
    """Serves one commit's wheel at /<commit>/vllm.whl, 404 for any other."""

    def __init__(self, wheel: bytes) -> None:
        self.wheel, self.commit, self.downloads = wheel, "", 0

    async def handle(self, request: web.Request) -> web.Response:
        if request.match_info["commit"] != self.commit:
            raise web.HTTPNotFound()
        self.downloads += 1
        return web.Response(body=self.wheel, content_type="application/octet-stream")


@pytest.fixture
async def wheels(libs: FakeLibraries, tmp_path: Path) -> AsyncIterator[tuple[WheelServer, str]]:
    server = WheelServer(make_wheel(libs, tmp_path))
    app = web.Application()
    app.router.add_get("/{commit}/vllm.whl", server.handle)
    async with TestServer(app, host="127.0.0.1") as test_server:
        yield server, str(test_server.make_url("/")).rstrip("/") + "/{commit}/vllm.whl"


@pytest.fixture
async def wheel_env(
    tmp_path: Path, wheels: tuple[WheelServer, str]
) -> AsyncIterator[tuple[Harness, WheelServer]]:
    server, template = wheels
    config = CONFIG + ALLOWLIST_CONFIG + f'  wheel_url: "{template}"\n  wheel_max_mb: 5\n'
    config = config.replace("buildkite:\n  organization: vllm\n  pipelines: [ci]\n", "")
    config += "buildkite:\n  organization: vllm\n  pipelines: [ci]\n"
    async with harness(
        tmp_path / "h", repositories=(DOWNSTREAM,), start=False, cache_dir=str(tmp_path / "cache")
    ) as env:
        seed(env, config=config)
        env.sandbox.commit(
            DOWNSTREAM, {ABI_CHECK_FILE: abi_check(FA3, MIXED, DEEP_GEMM, ROCM)}, "audit"
        )
        server.commit = env.sandbox.head(DOWNSTREAM, "main")
        await env.start()
        yield env, server


async def test_wheel_audit_deletes_narrows_and_keeps(
    wheel_env: tuple[Harness, WheelServer],
) -> None:
    env, server = wheel_env
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1000.0, 300.0)
    await env.settle()

    [pull] = open_pulls(env, allowlist_text.STALE_BRANCH)
    assert entries(env, allowlist_text.STALE_BRANCH) == (
        "vllm_flash_attn/_vllm_fa2_C.abi3.so",  # the mixed glob, narrowed to its unstable library
        DEEP_GEMM,  # unstable: kept
        ROCM,  # matches nothing on this (CUDA) build: never deleted on this evidence
    )
    assert f"- remove `{FA3}`" in pull["body"]
    assert f"- narrow `{MIXED}` to `vllm_flash_attn/_vllm_fa2_C.abi3.so`" in pull["body"]
    assert "Per allowlist entry:" in pull["body"]
    assert server.downloads == 1

    env.sandbox.reset_log()
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 2000.0, 300.0)
    await env.settle()
    assert server.downloads == 1  # one audit per commit
    assert writes(env) == []


async def test_missing_wheel_is_recorded_not_guessed(
    wheel_env: tuple[Harness, WheelServer],
) -> None:
    env, server = wheel_env
    server.commit = "not-published-yet"
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1000.0, 300.0)
    await env.settle()

    assert open_pulls(env, allowlist_text.STALE_BRANCH) == []
    state = await env.running.services.store.get_state("wheel-audit", DOWNSTREAM)
    assert state is not None
    assert "no wheel at" in str(state["error"])
