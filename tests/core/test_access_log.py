"""The access log ``serve`` runs with: probes and stored webhooks at DEBUG, no secret from
a URL or a header."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from bot.core.access_log import SCRUBBED, AccessLogger, scrub_query
from bot.service.app import create_app

from .helpers import sign
from .service import Handlers, push_body, settings_for

URL_TOKEN = "url-token-that-must-not-show"
HEADER_TOKEN = "header-token-that-must-not-show"


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("", ""),
        ("token=abc", f"token={SCRUBBED}"),
        ("a=1&access_token=abc&b=2", f"a=1&access_token={SCRUBBED}&b=2"),
        ("API_KEY=abc&Client-Secret=d", f"API_KEY={SCRUBBED}&Client-Secret={SCRUBBED}"),
        ("%74oken=abc", f"%74oken={SCRUBBED}"),  # the name as sent, its value gone
        ("author=octocat&monkey=1&token", "author=octocat&monkey=1&token"),
    ],
)
def test_secret_query_values_are_scrubbed(query: str, shown: str) -> None:
    assert scrub_query(query) == shown


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[str]:
    runner = web.AppRunner(
        create_app(settings_for(tmp_path / "bot.db"), routers=[Handlers().router]),
        access_log_class=AccessLogger,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_probes_are_debug_and_no_token_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiohttp.access")
    body = push_body()
    async with served(tmp_path) as url, aiohttp.ClientSession() as session:
        for probe in ("/healthz", "/readyz", f"/metrics?token={URL_TOKEN}"):
            async with session.get(url + probe) as answer:
                assert answer.status == 200
        status_page = f"{url}/status?token={URL_TOKEN}&view=all"
        async with session.get(
            status_page, headers={"Authorization": f"Bearer {HEADER_TOKEN}"}
        ) as answer:
            await answer.read()
        hook = {
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": "d1",
            "X-Hub-Signature-256": sign(body),
            "Content-Type": "application/json",
        }
        async with session.post(url + "/webhooks/github", data=body, headers=hook) as answer:
            assert answer.status == 202
        async with session.post(url + "/webhooks/github?token=" + URL_TOKEN) as answer:
            assert answer.status == 400

    lines = [r for r in caplog.records if r.name == "aiohttp.access"]
    levels = {r.getMessage().split('"')[1].split(" ")[1]: r.levelno for r in lines}
    assert levels == {
        "/healthz": logging.DEBUG,
        "/readyz": logging.DEBUG,
        f"/metrics?token={SCRUBBED}": logging.DEBUG,
        f"/status?token={SCRUBBED}&view=all": logging.INFO,
        "/webhooks/github": logging.DEBUG,  # stored: the intake's own line says so
        f"/webhooks/github?token={SCRUBBED}": logging.INFO,  # refused
    }
    text = "\n".join(r.getMessage() for r in lines) + repr([r.__dict__ for r in lines])
    assert URL_TOKEN not in text
    assert HEADER_TOKEN not in text
