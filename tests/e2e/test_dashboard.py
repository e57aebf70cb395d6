"""The dashboard issue through the whole bot: created once, edited only when it changes."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.dashboard.flow import DASHBOARD_TITLE, MARKER
from bot.dashboard.issue import ADOPT_SETTING
from bot.dashboard.ownership import written_by
from bot.service.reconcile import enqueue_tick
from sandbox.harness import BotProcess, Harness, start_bot
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
    assert dashboard_edits(env) == []  # nothing changed: nothing written

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


def patches_to(env: Harness, number: int) -> int:
    path = f"/repos/{DOWNSTREAM}/issues/{number}"
    return sum(1 for r in env.sandbox.requests if r.method == "PATCH" and r.path == path)


async def test_idle_ticks_write_nothing_and_a_hand_edit_is_restored(env: Harness) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    await tick(env, 1000.0)
    [dashboard] = dashboards(env)
    issue = env.sandbox.repo(DOWNSTREAM).issues[dashboard["number"]]

    env.sandbox.reset_log()
    for at in (1300.0, 1600.0, 1900.0, 2200.0):
        await tick(env, at)
    assert patches_to(env, issue.number) == 0  # idle: not one write in four ticks

    issue.body = "tidied up by hand"
    await tick(env, 2500.0)
    assert issue.body == dashboard["body"]
    assert patches_to(env, issue.number) == 1


async def second_tick(second: BotProcess, at: float) -> None:
    await enqueue_tick(second.inbox, (DOWNSTREAM,), at, 300.0)
    await second.inbox.wait_idle()


async def test_a_second_deployment_leaves_the_dashboard_alone_until_told_to_adopt(
    env: Harness, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seed(env)
    await env.start()
    await merge_upstream(env, 1)
    await env.settle()
    await tick(env, 1000.0)
    [dashboard] = dashboards(env)
    production = written_by(dashboard["body"])
    assert production is not None

    # The same App started by mistake with its own, empty database.
    mistaken = replace(env.settings, database=str(tmp_path / "second.sqlite3"))
    second = await start_bot(mistaken)
    try:
        env.sandbox.reset_log()
        with caplog.at_level(logging.WARNING, logger="bot.dashboard.issue"):
            await second_tick(second, 1300.0)
            await second_tick(second, 1600.0)
        assert dashboard_edits(env) == []
        assert dashboards(env) == [dashboard]
        foreign = [m for m in caplog.messages if "another deployment" in m]
        assert len(foreign) == 1  # said once
        assert f"{ADOPT_SETTING}={production}" in foreign[0]
    finally:
        await second.stop()

    # Moved on purpose: the new database adopts it; the old one stops writing it.
    moved = await start_bot(replace(mistaken, adopt_dashboard=production))
    try:
        await second_tick(moved, 1900.0)
    finally:
        await moved.stop()
    [adopted] = dashboards(env)
    assert written_by(adopted["body"]) not in (None, production)
    env.sandbox.reset_log()
    await tick(env, 2200.0)
    assert dashboard_edits(env) == []
    assert dashboards(env) == [adopted]
