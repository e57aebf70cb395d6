"""Who may see the status page when a token is set: a script's bearer header, or a
browser's session cookie, got once from the login form or a ``?token=`` link.

The cookie holds an HMAC of the token, never the token: a leaked cookie does not give
the token away, and changing the token ends every session. Every comparison is in
constant time (both sides digested first, so not even the length shows).
"""

from __future__ import annotations

import hashlib
import hmac

COOKIE = "followup_bot_status"
# A browser session ends after half a day; the value itself is good until the token changes.
COOKIE_MAX_AGE = 12 * 3600
_SESSION_PURPOSE = b"followup-bot status session"


def session_value(token: str) -> str:
    """The cookie's value for ``token``."""
    return hmac.new(token.encode("utf-8"), _SESSION_PURPOSE, hashlib.sha256).hexdigest()


def authorized(header: str | None, token: str) -> bool:
    """Whether ``header`` is ``Bearer <token>``."""
    scheme, _, given = (header or "").partition(" ")
    return same(given.strip(), token) and scheme.lower() == "bearer"


def has_session(cookie: str | None, token: str) -> bool:
    return same(cookie or "", session_value(token))


def same(given: str, expected: str) -> bool:
    return hmac.compare_digest(_digest(given), _digest(expected))


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()
