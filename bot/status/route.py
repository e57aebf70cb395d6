"""``/status``: the page, behind the token when one is configured.

``GET`` shows the page to a bearer header or a session cookie (``login``), and the
login form to anyone else (401). The form ``POST``s the token back to the page; a
``GET`` with ``?token=`` does the same for a link. Either sets the cookie and
redirects (303) to the page's address without the token, so the token stays out of
the browser's address bar and history. While the database cannot be read the page
says so with 503, and nothing else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from bot.status.login import COOKIE, COOKIE_MAX_AGE, authorized, has_session, same, session_value
from bot.status.pages import TOKEN_FIELD, login_page, unavailable_page
from bot.status.read import StatusSources, read_status
from bot.status.render import render_page

UNAUTHORIZED = "401: this page needs Authorization: Bearer <FOLLOWUP_BOT_STATUS_TOKEN>"
CHALLENGE = 'Bearer realm="followup-bot status"'
RETRY_AFTER = "30"  # seconds, for a client that polls the page
# No script, no outside resource: the page only needs its own inline style, and the login
# form posts to the page itself.
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
# The login form is small: a bigger body is not one.
FORM_MAX_BYTES = 4096

StatusView = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status_view(
    *,
    token: str | None,
    sources: Callable[[], StatusSources],
    repositories: Sequence[str],
    clock: Callable[[], float],
) -> StatusView:
    """The view for ``GET`` and ``POST``; ``sources`` is called per request because the
    store opens after routing."""

    async def view(request: web.Request) -> web.StreamResponse:
        if token is not None:
            refused = await _login(request, token)
            if refused is not None:
                return refused
        found = sources()
        try:
            data = await read_status(found, repositories, now=clock())
        except Exception as exc:
            # The store's outage logs its one line when an outage begins (none per request);
            # anything a retry cannot cure is a bug, with its traceback.
            if not found.store.outage.failed(exc):
                raise
            page = unavailable_page(found.store.outage.since)
            return _html(page, status=503, extra={"Retry-After": RETRY_AFTER})
        found.store.outage.answered()
        return _html(render_page(data))

    return view


async def _login(request: web.Request, token: str) -> web.StreamResponse | None:
    """None when the request may see the page; else the answer (the form, or the cookie
    and a redirect)."""
    if request.method == "POST":
        given = await _posted_token(request)
        return _signed_in(request, token) if same(given, token) else _form(request, wrong=True)
    if TOKEN_FIELD in request.query:
        if same(request.query[TOKEN_FIELD], token):
            return _signed_in(request, token)
        return _form(request, wrong=True)
    if authorized(request.headers.get("Authorization"), token):
        return None
    if has_session(request.cookies.get(COOKIE), token):
        return None
    return _form(request, wrong=False)


async def _posted_token(request: web.Request) -> str:
    if request.content_length is not None and request.content_length > FORM_MAX_BYTES:
        return ""
    form = await request.post()
    value = form.get(TOKEN_FIELD)
    return value if isinstance(value, str) else ""


def _signed_in(request: web.Request, token: str) -> web.StreamResponse:
    # The page's own address, every query parameter kept but the token.
    clean = request.rel_url.without_query_params(TOKEN_FIELD)
    response = web.Response(status=303, headers={**HEADERS, "Location": str(clean)})
    response.set_cookie(
        COOKIE,
        session_value(token),
        path=request.path,
        max_age=COOKIE_MAX_AGE,
        httponly=True,
        samesite="Strict",
        secure=request.secure,
    )
    return response


def _form(request: web.Request, *, wrong: bool) -> web.StreamResponse:
    return _html(
        login_page(request.path, wrong=wrong),
        status=401,
        extra={"WWW-Authenticate": CHALLENGE},
    )


def _html(page: str, *, status: int = 200, extra: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        text=page,
        content_type="text/html",
        charset="utf-8",
        headers={**HEADERS, **(extra or {})},
    )
