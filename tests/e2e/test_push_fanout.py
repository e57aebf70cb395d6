"""An upstream push is one unit of work per served repository: one failing never blocks another."""

from __future__ import annotations

from pathlib import Path

from bot.core.sources import SYNC_EVENT
from bot.store.protocol import DeliveryStatus
from sandbox.harness import harness
from sandbox.vllm_shapes import DOWNSTREAM, UPSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls, merge_upstream

MISSING = "vllm-project/not-installed"  # served by config, but the App cannot reach it


async def test_a_repository_that_fails_does_not_stop_the_others(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(MISSING, DOWNSTREAM), start=False) as env:
        seed(env)
        await env.start()
        new = await merge_upstream(env, 1)
        failed = await env.settle(expect_failures=True)

        [pull] = bump_pulls(env)
        assert new[:7] in pull["title"]
        assert failed
        assert all(r.delivery.event == SYNC_EVENT for r in failed)
        assert all(r.delivery.delivery_id.endswith(f"/sync/{MISSING}") for r in failed)
        done = await env.running.services.store.list_deliveries(DeliveryStatus.DONE)
        syncs = [r.delivery for r in done if r.delivery.event == SYNC_EVENT]
        assert any(d.delivery_id.endswith(f"/sync/{DOWNSTREAM.lower()}") for d in syncs)


async def test_a_redelivered_push_fans_out_nothing_new(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(DOWNSTREAM,), start=False) as env:
        seed(env)
        await env.start()
        await merge_upstream(env, 1)
        await env.settle()
        push = next(d for d in env.sandbox.deliveries if d.event == "push")
        before = len(env.sandbox.requests)

        await env.sandbox.deliver("push", push.payload, delivery_id=push.delivery_id + "-again")
        await env.settle()

        # A new delivery id is a new reason to look: it reads, and writes nothing.
        writes = [r for r in env.sandbox.requests[before:] if r.method != "GET"]
        assert [r.operation_id for r in writes] == ["apps/create-installation-access-token"] * len(
            writes
        )
        assert len(bump_pulls(env)) == 1


async def test_a_main_push_that_touches_no_pin_reads_no_pin(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(DOWNSTREAM,), start=False) as env:
        seed(env)
        await env.start()
        await env.sandbox.push_commit(UPSTREAM, {"csrc/a.cu": "// a\n"}, "Change (#1)")
        await env.settle()
        env.sandbox.reset_log()
        await env.sandbox.push_commit(DOWNSTREAM, {"docs/x.md": "# x\n"}, "Docs")
        await env.settle()
        operations = {r.operation_id for r in env.sandbox.requests}
        # No pin was looked at: no PR listing, no upstream head, no pin file.
        assert not operations & {"pulls/list", "git/get-ref", "repos/compare-commits"}
