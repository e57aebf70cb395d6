"""``GET /status`` on the running service: open without a token, behind it with one."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from bot.service.settings import Settings
from bot.status import render
from bot.status.route import CHALLENGE, UNAUTHORIZED, authorized
from sandbox.harness import harness
from sandbox.vllm_shapes import DOWNSTREAM
from tests.core.test_settings import minimal_env

TOKEN = "s3cret-status-token"


async def get(url: str, authorization: str | None = None) -> tuple[int, str, dict[str, str]]:
    headers = {} if authorization is None else {"Authorization": authorization}
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as response:
        return response.status, await response.text(), dict(response.headers)


async def test_the_token_guards_the_page(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(DOWNSTREAM,), status_token=TOKEN) as env:
        url = env.running.webhook_url.removesuffix("/webhooks/github") + "/status"
        for header in (None, "Bearer wrong", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"):
            status, text, headers = await get(url, header)
            assert (status, text) == (401, UNAUTHORIZED), header
            assert headers["WWW-Authenticate"] == CHALLENGE
        status, text, headers = await get(url, f"Bearer {TOKEN}")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Cache-Control"] == "no-store"
    assert f"<title>{render.TITLE}</title>" in text
    assert f"<h2>{DOWNSTREAM}</h2>" in text
    assert TOKEN not in text  # nor any other setting: the page shows only recorded state
    assert env.settings.webhook_secret not in text


async def test_open_without_a_token(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(DOWNSTREAM,)) as env:
        url = env.running.webhook_url.removesuffix("/webhooks/github") + "/status"
        status, text, _ = await get(url)
    assert status == 200
    assert render.NO_PINS in text
    assert render.NO_FAILURES in text


def test_authorized_compares_the_whole_bearer_value() -> None:
    assert authorized(f"Bearer {TOKEN}", TOKEN)
    assert authorized(f"bearer {TOKEN}", TOKEN)  # the scheme is case-insensitive
    for header in (None, "", "Bearer", f"Bearer {TOKEN[:-1]}", f"Token {TOKEN}", TOKEN):
        assert not authorized(header, TOKEN), header


def test_the_token_setting_is_read_and_kept_out_of_repr() -> None:
    settings = Settings.from_env(minimal_env(FOLLOWUP_BOT_STATUS_TOKEN=f" {TOKEN}\n"))
    assert settings.status_token == TOKEN
    assert TOKEN not in repr(settings)
    assert Settings.from_env(minimal_env()).status_token is None
