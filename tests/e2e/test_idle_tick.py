"""An idle reconcile tick writes nothing: not to GitHub, not to the store.

A busy repository (a bump PR with a prune commit from its audit, the stale-entries PR
open, a landing configured) is ticked until nothing is left to do; the next ticks must
neither write to GitHub (counted from the stand-in's log) nor rewrite a record. Before,
every tick rewrote each pin's record and the default branch's name with the same
content. The dashboard is left out: it compares its own body before editing.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.service.reconcile import enqueue_tick
from bot.store.kinds import Kind
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM
from tests.e2e.conftest import DEEP_GEMM, FA3, ROCM, audit_build, seed_allowlist, stale_line
from tests.e2e.test_allowlist_flow import BRANCH, bump_pr

WRITES = {"POST", "PATCH", "PUT", "DELETE"}
DASHBOARD = {"issues/create", "issues/update", "apps/create-installation-access-token"}
DASHBOARD_KINDS = {Kind.DASHBOARD}


async def test_an_idle_tick_writes_nothing(
    ci_env: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = ci_env
    seed_allowlist(env, FA3, DEEP_GEMM, ROCM)
    await env.start()
    await bump_pr(env)
    head = env.sandbox.head(DOWNSTREAM, BRANCH)
    await audit_build(env, branch=BRANCH, commit=head, lines=(stale_line(FA3),))
    main = env.sandbox.head(DOWNSTREAM, "main")
    await audit_build(env, branch="main", commit=main, lines=(stale_line(DEEP_GEMM),))
    inbox = env.running.inbox
    await enqueue_tick(inbox, (DOWNSTREAM,), 1000.0, 300.0)
    await env.settle()

    store = env.running.services.store
    stored: list[tuple[str, str]] = []
    put, delete = store.put_state, store.delete_state

    async def recording_put(kind: str, key: str, value: dict[str, Any]) -> None:
        stored.append((kind, key))
        await put(kind, key, value)

    async def recording_delete(kind: str, key: str) -> None:
        stored.append((kind, key))
        await delete(kind, key)

    monkeypatch.setattr(store, "put_state", recording_put)
    monkeypatch.setattr(store, "delete_state", recording_delete)
    for at in (1300.0, 1600.0):
        env.sandbox.reset_log()
        await enqueue_tick(inbox, (DOWNSTREAM,), at, 300.0)
        await env.settle()
        written = [
            f"{r.method} {r.path}"
            for r in env.sandbox.requests
            if r.method in WRITES and r.operation_id not in DASHBOARD
        ]
        assert written == []
        assert [(kind, key) for kind, key in stored if kind not in DASHBOARD_KINDS] == []
        assert any(r.operation_id == "repos/get-branch" for r in env.sandbox.requests)
