"""``/status`` on the running service: open without a token; behind it with one, for a
script's bearer header and for a browser's cookie (the login form, or ``?token=``); and
"database unreachable" with 503 while the database is down."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.core.settings import Settings
from bot.status import pages, render
from bot.status.login import COOKIE, authorized, has_session, session_value
from bot.status.read import StatusSources
from bot.status.route import CHALLENGE, RETRY_AFTER, status_view
from bot.store.outage import Outage
from sandbox.harness import Harness, harness
from sandbox.postgres_server import start_server
from sandbox.vllm_shapes import DOWNSTREAM
from tests.core.test_settings import minimal_env
from tests.status.world import Unreachable

TOKEN = "s3cret-status-token"
NOW = 1_754_000_000.0
POLL = 0.05  # seconds between looks, at most 600 of them


async def get(
    url: str, authorization: str | None = None, *, cookies: dict[str, str] | None = None
) -> tuple[int, str, dict[str, str]]:
    headers = {} if authorization is None else {"Authorization": authorization}
    async with (
        aiohttp.ClientSession(cookies=cookies) as session,
        session.get(url, headers=headers, allow_redirects=False) as response,
    ):
        return response.status, await response.text(), dict(response.headers)


def status_url(env: Harness) -> str:
    return env.running.webhook_url.removesuffix("/webhooks/github") + "/status"


async def test_the_token_guards_the_page(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(DOWNSTREAM,), status_token=TOKEN) as env:
        url = status_url(env)
        for header in (None, "Bearer wrong", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"):
            status, text, headers = await get(url, header)
            assert status == 401, header
            assert '<form class="login" method="post"' in text  # a browser can sign in
            assert pages.LOGIN_WRONG not in text
            assert headers["WWW-Authenticate"] == CHALLENGE
        for cookie in (TOKEN, session_value(TOKEN + "x"), ""):
            status, _, _ = await get(url, cookies={COOKIE: cookie})
            assert status == 401, cookie  # the raw token is not a session
        status, text, headers = await get(url, f"Bearer {TOKEN}")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Cache-Control"] == "no-store"
    assert f"<title>{render.TITLE}</title>" in text
    assert f"<h2>{DOWNSTREAM}</h2>" in text
    assert TOKEN not in text  # nor any other setting: the page shows only recorded state
    assert env.settings.webhook_secret not in text


async def test_the_login_form_sets_a_session_cookie(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(DOWNSTREAM,), status_token=TOKEN) as env:
        url = status_url(env)
        # A loopback address is an IP: the jar keeps its cookies only when told to.
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            async with session.post(url, data={"token": "wrong"}) as wrong:
                assert wrong.status == 401
                assert pages.LOGIN_WRONG in await wrong.text()
            async with session.post(url, data={"token": TOKEN}, allow_redirects=False) as signed:
                assert signed.status == 303
                assert signed.headers["Location"] == "/status"
                set_cookie = signed.headers["Set-Cookie"]
            async with session.get(url) as page:  # the jar sends the cookie back
                assert page.status == 200
                assert render.TITLE in await page.text()
    assert TOKEN not in set_cookie
    assert set_cookie.startswith(f"{COOKIE}={session_value(TOKEN)};")
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/status", "Max-Age="):
        assert attribute in set_cookie


async def test_a_token_in_the_address_is_exchanged_for_the_cookie(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(DOWNSTREAM,), status_token=TOKEN) as env:
        url = status_url(env)
        status, _, headers = await get(f"{url}?view=all&token={TOKEN}")
        wrong, text, _ = await get(f"{url}?token=nope")
        cookie = headers["Set-Cookie"].split(";")[0].split("=", 1)[1]
        page, _, _ = await get(url, cookies={COOKIE: cookie})
    assert status == 303
    assert headers["Location"] == "/status?view=all"  # the token dropped, the rest kept
    assert TOKEN not in headers["Location"]
    assert cookie == session_value(TOKEN)
    assert page == 200
    assert wrong == 401
    assert pages.LOGIN_WRONG in text
    assert "nope" not in text


async def test_open_without_a_token(tmp_path: Path) -> None:
    async with harness(tmp_path, repositories=(DOWNSTREAM,)) as env:
        status, text, _ = await get(status_url(env))
    assert status == 200
    assert render.NO_PINS in text
    assert render.NO_FAILURES in text


def test_authorized_compares_the_whole_bearer_value() -> None:
    assert authorized(f"Bearer {TOKEN}", TOKEN)
    assert authorized(f"bearer {TOKEN}", TOKEN)  # the scheme is case-insensitive
    for header in (None, "", "Bearer", f"Bearer {TOKEN[:-1]}", f"Token {TOKEN}", TOKEN):
        assert not authorized(header, TOKEN), header
    assert has_session(session_value(TOKEN), TOKEN)
    assert not has_session(None, TOKEN)
    assert session_value(TOKEN) != session_value(TOKEN + "x")


def test_the_token_setting_is_read_and_kept_out_of_repr() -> None:
    settings = Settings.from_env(minimal_env(FOLLOWUP_BOT_STATUS_TOKEN=f" {TOKEN}\n"))
    assert settings.status_token == TOKEN
    assert TOKEN not in repr(settings)
    assert Settings.from_env(minimal_env()).status_token is None


class Broken:
    """A store with a bug: not an outage."""

    def __init__(self) -> None:
        self.outage = Outage(lambda: NOW)

    def __getattr__(self, name: str) -> Callable[..., Awaitable[None]]:
        async def fails(*args: object, **kwargs: object) -> None:
            raise KeyError("a bug")

        return fails


@asynccontextmanager
async def serve(store: object, token: str | None = None) -> AsyncIterator[str]:
    """``/status`` alone, over ``store``."""
    app = web.Application()
    view = status_view(
        token=token,
        sources=lambda: StatusSources(store),  # type: ignore[arg-type]
        repositories=(DOWNSTREAM,),
        clock=lambda: NOW,
    )
    app.router.add_get("/status", view)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("/status"))
    finally:
        await server.close()


async def test_database_down_says_so_with_503(caplog: pytest.LogCaptureFixture) -> None:
    store = Unreachable()
    async with serve(store) as url:
        status, text, headers = await get(url)
        again, _, _ = await get(url)
    assert (status, again) == (503, 503)
    assert pages.DATABASE_UNREACHABLE in text
    assert pages.DOWN_SINCE.format(when="2025-07-31 22:13 UTC") in text
    assert "Traceback" not in text
    assert headers["Cache-Control"] == "no-store"
    assert headers["Retry-After"] == RETRY_AFTER
    # The outage's one line, not one per request, and no traceback.
    [line] = caplog.records
    assert line.getMessage().startswith("database unreachable since")
    assert line.exc_info is None
    assert store.outage.since == NOW


async def test_a_bug_is_not_taken_for_an_outage() -> None:
    async with serve(Broken()) as url:
        status, text, _ = await get(url)
    assert status == 500
    assert pages.DATABASE_UNREACHABLE not in text


async def test_database_down_is_checked_after_the_token() -> None:
    async with serve(Unreachable(), token=TOKEN) as url:
        refused, _, _ = await get(url)
        down, _, _ = await get(url, f"Bearer {TOKEN}")
    assert (refused, down) == (401, 503)


async def test_a_stopped_postgresql_answers_503_then_the_page_again(tmp_path: Path) -> None:
    """PostgreSQL of its own, stopped under the running service and started again."""
    server = start_server()
    try:
        async with harness(
            tmp_path, repositories=(DOWNSTREAM,), database=server.url, status_token=TOKEN
        ) as env:
            url, bearer = status_url(env), f"Bearer {TOKEN}"
            before, _, _ = await get(url, bearer)
            server.halt()
            try:
                during, text, _ = await get(url, bearer)
            finally:
                server.resume()
            after, _, _ = await wait_for_page(url, bearer)
    finally:
        server.stop()
    assert (before, during, after) == (200, 503, 200)
    assert pages.DATABASE_UNREACHABLE in text


async def wait_for_page(url: str, bearer: str) -> tuple[int, str, dict[str, str]]:
    """The page once the database answers again (the server takes a moment to start)."""
    for _ in range(600):
        found = await get(url, bearer)
        if found[0] != 503:
            return found
        await asyncio.sleep(POLL)
    return found
