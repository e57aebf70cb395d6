"""``GET /status``: the page, behind a bearer token when one is configured."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from bot.status.read import read_status
from bot.status.render import render_page
from bot.store.protocol import Store

UNAUTHORIZED = "401: this page needs Authorization: Bearer <FOLLOWUP_BOT_STATUS_TOKEN>"
CHALLENGE = 'Bearer realm="followup-bot status"'
# No script, no outside resource: the page only needs its own inline style.
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

StatusView = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status_view(
    *,
    token: str | None,
    store: Callable[[], Store],
    repositories: Sequence[str],
    clock: Callable[[], float],
) -> StatusView:
    """The view; ``store`` is called per request because the store opens after routing."""

    async def view(request: web.Request) -> web.StreamResponse:
        if token is not None and not authorized(request.headers.get("Authorization"), token):
            return web.Response(
                status=401,
                text=UNAUTHORIZED,
                headers={"WWW-Authenticate": CHALLENGE, **HEADERS},
            )
        data = await read_status(store(), repositories, now=clock())
        return web.Response(
            text=render_page(data), content_type="text/html", charset="utf-8", headers=HEADERS
        )

    return view


def authorized(header: str | None, token: str) -> bool:
    """Whether ``header`` is ``Bearer <token>``, in time that does not depend on where
    they differ (both sides hashed first, so not on the length either)."""
    scheme, _, given = (header or "").partition(" ")
    same = hmac.compare_digest(_digest(given.strip()), _digest(token))
    return same and scheme.lower() == "bearer"


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()
