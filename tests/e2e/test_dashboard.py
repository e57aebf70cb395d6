"""The dashboard issue through the whole bot: created once, edited only when it changes."""

from __future__ import annotations

from typing import Any

from bot.dashboard.flow import DASHBOARD_TITLE, MARKER
from bot.service.reconcile import enqueue_tick
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import merge_upstream


def dashboards(env: Harness) -> list[dict[str, Any]]:
    return [
        {"number": issue.number, "title": issue.title, "body": issue.body or ""}
        for issue in env.sandbox.repo(DOWNSTREAM).issues.values()
        if issue.pull is None and MARKER in (issue.body or "")
    ]


async def tick(env: Harness, at: float) -> None:
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), at, 300.0)
    await env.settle()


def dashboard_edits(env: Harness) -> list[str]:
    return [
        r.operation_id or ""
        for r in env.sandbox.requests
        if r.operation_id in ("issues/create", "issues/update")
    ]


async def test_dashboard_is_created_then_edited_only_on_change(env: Harness) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    env.sandbox.reset_log()

    await tick(env, 1000.0)
    [dashboard] = dashboards(env)
    assert dashboard["title"] == DASHBOARD_TITLE
    assert "flash-attention" in dashboard["body"]
    assert dashboard_edits(env) == ["issues/create"]

    env.sandbox.reset_log()
    await tick(env, 2000.0)
    assert dashboard_edits(env) == []  # nothing changed: not even a request

    await merge_upstream(env, 2)
    await env.settle()
    env.sandbox.reset_log()
    await tick(env, 3000.0)
    assert dashboard_edits(env) == ["issues/update"]
    assert len(dashboards(env)) == 1


async def test_config_errors_appear_on_the_dashboard(env: Harness) -> None:
    seed(env, config=CONFIG.replace("upstream:", "upstreem:"))
    await env.start()
    await tick(env, 1000.0)
    [dashboard] = dashboards(env)
    assert "unknown key 'upstreem'" in dashboard["body"]


async def test_no_dashboard_where_the_bot_is_not_configured(env: Harness) -> None:
    env.sandbox.create_repo(DOWNSTREAM, files={"README.md": "x\n"}, installation_id=3)
    await env.start()
    await tick(env, 1000.0)
    assert dashboards(env) == []
