"""Watching the service: /metrics, JSON log lines with the delivery's fields, /readyz
(the database only)."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer
from gidgethub import routing, sansio
from prometheus_client.parser import text_string_to_metric_families

from bot.context.handler_ids import handler_id
from bot.context.services import Services
from bot.core import log_context
from bot.core import metrics as outcomes
from bot.core.settings import Settings
from bot.service import readiness
from bot.service.app import create_app
from bot.service.watching import NOT_READY, READY
from sandbox.harness import app_key
from tests.scripted_server import ScriptedServer

from .service import FRAGILE, STEADY, Handlers, Service, push_body, settings_for

LOGGED = "test.logged"
HANDLING = "handling the push"
BUILDKITE_TOKEN = "bk-api-token-that-must-not-show"
BUILDKITE_WEBHOOK_TOKEN = "bk-webhook-token-that-must-not-show"


@asynccontextmanager
async def serving(
    settings: Settings,
    routers: Sequence[routing.Router],
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[Service]:
    app = create_app(settings, routers=routers, clock=clock)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        yield Service(app, runner, f"http://127.0.0.1:{port}", Path(settings.database))
    finally:
        await runner.cleanup()


async def get(service: Service, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(service.url + path) as response:
        return response.status, await response.text()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and sorted labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def delivery_count(found: dict[Any, float], event: str, outcome: str) -> float:
    labels = (("event", event), ("outcome", outcome), ("source", "github"))
    return found.get(("followup_bot_deliveries_total", labels), 0.0)


def handler_count(found: dict[Any, float], name: str, handler: str) -> float:
    return found.get((name, (("handler", handler),)), 0.0)


async def test_metrics_count_deliveries_handlers_and_the_inbox(tmp_path: Path) -> None:
    handlers = Handlers()
    async with serving(settings_for(tmp_path / "bot.db"), [handlers.router]) as service:
        await service.post("d1", push_body())  # the fragile handler fails: failed
        await service.settle()
        handlers.broken = False
        assert (await service.post("d1", push_body()))[1]["status"] == "requeued"
        await service.settle()  # done this time; steady is not run again
        assert (await service.post("d1", push_body()))[1]["status"] == "duplicate"
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                service.url + "/webhooks/github",
                data=push_body(),
                headers={
                    "X-GitHub-Event": "push",
                    "X-GitHub-Delivery": "forged",
                    "Content-Type": "application/json",
                },
            ) as refused,
        ):
            assert refused.status == 401
        status, text = await get(service, "/metrics")

    assert status == 200
    found = samples(text)
    for outcome, count in [("accepted", 1), ("failed", 1), ("requeued", 1), ("done", 1)]:
        assert delivery_count(found, "push", outcome) == count, outcome
    assert delivery_count(found, "push", "duplicate") == 1
    assert delivery_count(found, outcomes.UNVERIFIED, outcomes.REJECTED) == 1
    assert handler_count(found, "followup_bot_handler_attempts_total", FRAGILE) == 2
    assert handler_count(found, "followup_bot_handler_failures_total", FRAGILE) == 1
    assert handler_count(found, "followup_bot_handler_attempts_total", STEADY) == 1
    assert handler_count(found, "followup_bot_handler_failures_total", STEADY) == 0
    assert handler_count(found, "followup_bot_handler_duration_seconds_count", FRAGILE) == 2
    queued = ("followup_bot_inbox_deliveries", (("status", "queued"),))
    assert found[queued] == 0
    assert found["followup_bot_inbox_oldest_queued_age_seconds", ()] == 0


async def test_two_apps_in_one_process_count_apart(tmp_path: Path) -> None:
    handlers = Handlers()
    handlers.broken = False
    settings = settings_for(tmp_path / "one.db")
    other = dataclasses.replace(settings, database=str(tmp_path / "two.db"))
    async with (
        serving(settings, [handlers.router]) as one,
        serving(other, [handlers.router]) as two,
    ):
        await one.post("d1", push_body())
        await one.settle()
        _, text = await get(two, "/metrics")
    assert delivery_count(samples(text), "push", "accepted") == 0


class Logged:
    """One handler that logs a line while it handles a push."""

    def __init__(self) -> None:
        self.router = routing.Router()
        self.router.add(self.handle, "push")

    @handler_id(LOGGED)
    async def handle(self, event: sansio.Event, services: Services) -> None:
        logging.getLogger("tests.logged").info(HANDLING)


async def test_json_log_lines_carry_the_delivery_fields(tmp_path: Path) -> None:
    stream = io.StringIO()
    handler = log_context.handler_for(log_context.FORMAT_JSON, stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        async with serving(settings_for(tmp_path / "bot.db"), [Logged().router]) as service:
            await service.post("d-json", push_body())
            await service.settle()
    finally:
        root.removeHandler(handler)
        root.setLevel(level)

    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    [handled] = [line for line in lines if line["message"] == HANDLING]
    assert handled["delivery_id"] == "d-json"
    assert handled["event"] == "push"
    assert handled["repository"] == "o/r"
    assert handled["handler"] == LOGGED
    assert handled["attempt"] == 1
    [outcome] = [line for line in lines if line["message"].startswith("delivery d-json ")]
    assert outcome["delivery_id"] == "d-json"
    assert outcome["attempt"] == 1
    assert "handler" not in outcome  # the end of the attempt, not of one handler


def test_text_lines_append_the_bound_fields() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("tests.text_context")
    handler = log_context.handler_for(log_context.FORMAT_TEXT, stream)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("outside")
        with log_context.bound(delivery_id="d9", handler="h.x", repository=None):
            logger.info("inside")
    finally:
        logger.removeHandler(handler)
    outside, inside = stream.getvalue().splitlines()
    assert outside.endswith("outside")
    assert inside.endswith("inside [delivery_id=d9 handler=h.x]")


async def test_metrics_show_no_secret(tmp_path: Path) -> None:
    handlers = Handlers()
    settings = dataclasses.replace(
        settings_for(tmp_path / "bot.db"),
        buildkite_api_token=BUILDKITE_TOKEN,
        buildkite_webhook_token=BUILDKITE_WEBHOOK_TOKEN,
        registry_username="robot",
        registry_password="registry-password-that-must-not-show",
    )
    async with serving(settings, [handlers.router]) as service:
        await service.post("d1", push_body())
        await service.settle()
        _, text = await get(service, "/metrics")
    assert "followup_bot_deliveries_total" in text
    secrets = [
        settings.webhook_secret,
        BUILDKITE_TOKEN,
        BUILDKITE_WEBHOOK_TOKEN,
        "registry-password-that-must-not-show",
        *[line for line in settings.private_key.splitlines() if line and "-----" not in line],
    ]
    assert [secret for secret in secrets if secret in text] == []


async def refused_answer(request: web.Request) -> web.StreamResponse:
    return web.json_response({"message": "A JSON web token could not be decoded"}, status=401)


async def github_stand_in(
    aiohttp_server: Callable[..., Any], answer: Callable[[web.Request], Any]
) -> tuple[ScriptedServer, str]:
    scripted = ScriptedServer()
    scripted.route("GET", "/repos/o/r/installation", answer)
    server: TestServer = await aiohttp_server(scripted.app)
    return scripted, str(server.make_url("")).rstrip("/")


def with_github(tmp_path: Path, url: str) -> Settings:
    private_key, _ = app_key()  # a real key: the App's JWT is signed with it
    return dataclasses.replace(
        settings_for(tmp_path / "bot.db"),
        github_api_url=url,
        repositories=("o/r",),
        private_key=private_key,
    )


async def test_ready_whatever_github_says_and_without_asking_it(
    tmp_path: Path, aiohttp_server: Callable[..., Any]
) -> None:
    # GitHub refusing the App is every replica's problem at once: readiness must not
    # take them all out of the Service for it (doctor and /status say it instead).
    scripted, url = await github_stand_in(aiohttp_server, refused_answer)
    async with serving(with_github(tmp_path, url), [Handlers().router]) as service:
        first = await get(service, "/readyz")
        second = await get(service, "/readyz")
    assert first == (200, json.dumps({"status": READY}))
    assert second[0] == 200
    assert scripted.seen("GET", "/repos/o/r/installation") == []


async def test_not_ready_when_the_database_is_closed(tmp_path: Path) -> None:
    async with serving(settings_for(tmp_path / "bot.db"), [Handlers().router]) as service:
        await service.inbox.stop()  # its workers would only retry the closed store
        await service.store.close()
        status, text = await get(service, "/readyz")
        metrics_status, metrics_text = await get(service, "/metrics")
    assert status == 503
    answer = json.loads(text)
    assert answer["status"] == NOT_READY
    assert list(answer["failing"]) == [readiness.DATABASE]
    # The counters still show; the inbox's depth, unreadable, is left out.
    assert metrics_status == 200
    assert "followup_bot_inbox_deliveries" not in metrics_text


async def test_ready_while_the_inbox_is_behind_which_metrics_show(tmp_path: Path) -> None:
    now = [1_000_000.0]
    async with serving(
        settings_for(tmp_path / "bot.db"), [Handlers().router], clock=lambda: now[0]
    ) as service:
        await service.inbox.stop()  # workers gone: what is queued stays queued
        await service.post("d1", push_body())
        now[0] += 3600.0
        status, text = await get(service, "/readyz")
        _, metrics_text = await get(service, "/metrics")
    assert (status, json.loads(text)) == (200, {"status": READY})
    found = samples(metrics_text)
    assert found["followup_bot_inbox_deliveries", (("status", "queued"),)] == 1
    assert found["followup_bot_inbox_oldest_queued_age_seconds", ()] == 3600.0
