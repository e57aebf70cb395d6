"""Log lines: the time with its zone in both formats, and the repository on every line
about a delivery, Buildkite's and internal ones included."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from gidgethub import routing, sansio

from bot.context.handler_ids import handler_id
from bot.context.services import Services
from bot.core import log_context
from bot.core.sources import RECONCILE_EVENT
from bot.service.reconcile import reconcile_delivery

from .service import settings_for
from .test_watching import serving

BUILDKITE_TOKEN = "bk-webhook-token"
HANDLING = "handling it"
BUILD_FINISHED = {
    "event": "build.finished",
    "build": {
        "url": "https://api.buildkite.com/v2/organizations/o/pipelines/ci/builds/7",
        "branch": "main",
        "state": "passed",
    },
    "pipeline": {"slug": "ci", "repository": "git@github.com:o/r.git"},
}


@pytest.mark.parametrize("log_format", log_context.LOG_FORMATS)
def test_each_line_starts_with_an_iso_time_in_utc(log_format: str) -> None:
    stream = io.StringIO()
    logger = logging.getLogger("tests.log_time")
    handler = log_context.handler_for(log_format, stream)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("a line")
    finally:
        logger.removeHandler(handler)
    line = stream.getvalue().strip()
    stamp = json.loads(line)["asctime"] if log_format == "json" else line.split(" ", 1)[0]
    when = datetime.fromisoformat(stamp)
    assert when.utcoffset() == timedelta(0)
    assert "T" in stamp


class Logs:
    """Handlers that log a line on a finished build and on a reconcile tick."""

    def __init__(self) -> None:
        self.router = routing.Router()
        self.router.add(self.on_build, "buildkite:build.finished")
        self.router.add(self.on_tick, RECONCILE_EVENT)

    @handler_id("test.on_build")
    async def on_build(self, event: sansio.Event, services: Services) -> None:
        logging.getLogger("tests.logs").info(HANDLING)

    @handler_id("test.on_tick")
    async def on_tick(self, event: sansio.Event, services: Services) -> None:
        logging.getLogger("tests.logs").info(HANDLING)


@contextmanager
def json_lines() -> Iterator[list[dict[str, Any]]]:
    """Every record logged within the block, as the JSON format writes it."""
    stream = io.StringIO()
    handler = log_context.handler_for(log_context.FORMAT_JSON, stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    lines: list[dict[str, Any]] = []
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        lines.extend(json.loads(line) for line in stream.getvalue().splitlines())


async def test_buildkite_and_internal_delivery_lines_name_the_repository(tmp_path: Path) -> None:
    settings = dataclasses.replace(
        settings_for(tmp_path / "bot.db"), buildkite_webhook_token=BUILDKITE_TOKEN
    )
    with json_lines() as lines:
        async with serving(settings, [Logs().router]) as service:
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    service.url + "/webhooks/buildkite",
                    json=BUILD_FINISHED,
                    headers={
                        "X-Buildkite-Event": "build.finished",
                        "X-Buildkite-Token": BUILDKITE_TOKEN,
                        "X-Buildkite-Request": "bk-1",
                    },
                ) as answer,
            ):
                assert answer.status == 202
            # Queued as another process would have: no parsed payload comes with it.
            await service.inbox.submit(reconcile_delivery("o/tick", 1000.0, 60.0))
            await service.settle()

    about = [
        line for line in lines if line.get("delivery_id") == "bk-1" or "bk-1" in line["message"]
    ]
    # Taken in (however many lines the intake writes), handled, ended: each names it.
    assert [line["message"] for line in about][-2] == HANDLING
    assert "bk-1" in about[-1]["message"]
    assert {line.get("repository") for line in about} == {"o/r"}
    tick = [line for line in lines if line.get("delivery_id", "").startswith("reconcile:o/tick")]
    assert len(tick) == 2  # handled, ended
    assert tick[0]["message"] == HANDLING
    assert {line.get("repository") for line in tick} == {"o/tick"}
