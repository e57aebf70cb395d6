"""Logs an operator can read: one line per failed attempt, a bug's traceback once."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from bot.core.sources import RECONCILE_EVENT
from bot.service.reconcile import enqueue_tick
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM
from tests.e2e.conftest import seed

MAX_ATTEMPTS = 3


def bot_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(("bot.", "handlers."))]


async def test_an_unreachable_github_costs_one_line_per_attempt(
    env: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    seed(env)
    env.settings = dataclasses.replace(env.settings, max_attempts=MAX_ATTEMPTS)
    await env.start()
    env.sandbox.faults.outage(503)
    caplog.set_level(logging.INFO)
    caplog.clear()

    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1000.0, 300.0)
    failed = await env.settle(expect_failures=True)

    assert failed
    assert all(r.delivery.event == RECONCILE_EVENT for r in failed)
    lines = bot_records(caplog)
    attempts = [r for r in lines if "attempt" in r.getMessage() and "reconcile" in r.getMessage()]
    assert len(attempts) == MAX_ATTEMPTS  # one line each, the last one "failed"
    assert "failed:" in attempts[-1].getMessage()
    assert len(lines) <= MAX_ATTEMPTS + 2  # nothing else but a line or two of context
    assert all(r.exc_info is None for r in lines)  # an outage is no bug: no traceback


async def test_a_bugs_traceback_is_logged_once(
    env: Harness, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(env)
    await env.start()

    async def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("bot.pins.bump.sync_repo", broken)
    caplog.set_level(logging.INFO)
    caplog.clear()

    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1000.0, 300.0)
    failed = await env.settle(expect_failures=True)

    assert any("ZeroDivisionError: a bug" in str(r.last_error) for r in failed)
    with_traceback = [r for r in bot_records(caplog) if r.exc_info is not None]
    assert len(with_traceback) == 1
    assert "ZeroDivisionError: a bug" in with_traceback[0].getMessage()
    assert with_traceback[0].exc_info is not None
    assert with_traceback[0].exc_info[0] is ZeroDivisionError
