"""The scenario API scripts a whole world: bump, audit, prune, approve, land, and reports
a handler's failure from ``settle()`` instead of leaving it in the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.harness import HandlerFailures
from sandbox.scenario import World, world
from sandbox.vllm_shapes import (
    ABI_CHECK_FILE,
    ALLOWLIST_CONFIG,
    AUDIT_STEP,
    CONFIG,
    DOWNSTREAM,
    FA3_ENTRY,
    LANDING_CONFIG,
    stale_line,
)
from tests.e2e.test_bump_bad_input import post_signed


async def test_a_scripted_world_bumps_prunes_and_lands(tmp_path: Path) -> None:
    async with world(tmp_path, buildkite=True) as w:
        pinned = w.upstream()
        w.downstream(pinned, config=CONFIG + ALLOWLIST_CONFIG + LANDING_CONFIG)
        w.allowlist(FA3_ENTRY, "_rocm_C.abi3.so")
        alice = w.person("alice", "write")
        await w.start()

        new = await w.merge_upstream("hopper/api.cpp", "// stable ABI\n", "Migrate FA3 (#165)")
        await w.settle()
        [pull] = w.bump_pulls()
        assert new[:7] in pull["title"]

        stale = w.job(AUDIT_STEP, state="failed", log=[stale_line(FA3_ENTRY)])
        await w.build(pull, [w.job("image-build"), stale])
        await w.settle()
        pruned = w.pull(pull["number"])
        assert pruned["head"]["sha"] != pull["head"]["sha"]
        allowlist = w.github.read_file(DOWNSTREAM, pruned["head"]["ref"], ABI_CHECK_FILE)
        assert FA3_ENTRY not in str(allowlist)

        await w.approve(pruned, by=alice)
        await w.settle()
        await w.build(pruned, [w.job("image-build"), World.audit_passed(AUDIT_STEP)])
        await w.settle()
        assert w.pull(pull["number"])["merged"] is True
        assert w.github.violations == []


async def test_settle_reports_a_failed_delivery(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.downstream(w.upstream())
        await w.start()
        await post_signed(w.env, "push", {"ref": "refs/heads/main"}, "broken-1")

        with pytest.raises(HandlerFailures) as raised:
            await w.settle()

        [record] = raised.value.records
        assert record.delivery.delivery_id == "broken-1"
        assert "broken-1 (push): PermanentError" in str(raised.value)
        assert await w.settle() == []  # reported once, not again


def test_a_person_needs_a_real_permission() -> None:
    with pytest.raises(ValueError, match="permission must be one of"):
        World.__new__(World).person("mallory", "owner")
