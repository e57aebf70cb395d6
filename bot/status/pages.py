"""The status page's other two pages, pure HTML: the login form and the database outage."""

from __future__ import annotations

from html import escape

from bot.status.render_parts import document, paragraph, when

LOGIN_TITLE = "followup-bot status: sign in"
LOGIN_NOTE = (
    "This page needs the status token (FOLLOWUP_BOT_STATUS_TOKEN). Scripts may send it as "
    "Authorization: Bearer <token> instead."
)
LOGIN_WRONG = "That token is not the status token."
LOGIN_LABEL = "Status token"
LOGIN_BUTTON = "Sign in"
TOKEN_FIELD = "token"
DOWN_TITLE = "followup-bot status: database unreachable"
DATABASE_UNREACHABLE = "database unreachable"
DOWN_SINCE = "Unreachable since {when}."
DOWN_NOTE = (
    "The bot cannot read its database right now, so there is nothing to show. Webhooks "
    "are refused with 503 meanwhile (GitHub and Buildkite show them as failed, to redeliver); "
    "this page comes back by itself once the database answers."
)


def login_page(action: str, *, wrong: bool) -> str:
    """A form that posts the token to ``action`` (the page's own path)."""
    body = [f"<h1>{escape(LOGIN_TITLE)}</h1>", paragraph(LOGIN_NOTE)]
    if wrong:
        body.append(f'<p class="errors" role="alert">{escape(LOGIN_WRONG)}</p>')
    body.append(
        f'<form class="login" method="post" action="{escape(action, quote=True)}">'
        f'<label for="{TOKEN_FIELD}">{escape(LOGIN_LABEL)}</label>'
        f'<input type="password" id="{TOKEN_FIELD}" name="{TOKEN_FIELD}" required '
        'autocomplete="current-password" autofocus>'
        f'<button type="submit">{escape(LOGIN_BUTTON)}</button></form>'
    )
    return document(LOGIN_TITLE, body)


def unavailable_page(since: float | None) -> str:
    """``since``: when this process found the database gone (None: not known)."""
    body = [
        f"<h1>{escape(DOWN_TITLE)}</h1>",
        f'<p class="down" role="alert">{escape(DATABASE_UNREACHABLE)}</p>',
    ]
    if since is not None:
        body.append(paragraph(DOWN_SINCE.format(when=when(since))))
    body.append(paragraph(DOWN_NOTE))
    return document(DOWN_TITLE, body)
