"""What one manifest probe found, and its wording for a table cell.

A probe never raises for the registry's trouble: a tag the bot cannot see is
"unknown", which callers show and decide on, rather than a failed delivery.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.registry.reference import ImageRef

UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
RATE_LIMITED = "rate limited"
RATE_LIMITED_RETRY = "rate limited (retry after {seconds:.0f} s)"
SERVER_ERROR = "server error"
UNEXPECTED = "unexpected answer"
UNREACHABLE = "unreachable: {reason}"
TIMED_OUT = "timed out after {seconds:g} s"
CONNECTION_REFUSED = "connection refused"
DNS_FAILED = "DNS lookup failed for {host}"
TOKEN_REFUSED = "token endpoint {endpoint} answered {status}"
TOKEN_UNREACHABLE = "token endpoint {endpoint} unreachable: {reason}"
TOKEN_MISSING = "token endpoint {endpoint} gave no token"


@dataclass(frozen=True)
class TagProbe:
    """The registry's answer to a manifest ``HEAD`` (None: no answer) and what went wrong."""

    ref: ImageRef
    status: int | None
    error: str | None = None

    @property
    def exists(self) -> bool | None:
        """True on 200, False on 404, None when the answer says nothing about the tag."""
        if self.status == 200:
            return True
        if self.status == 404:
            return False
        return None

    def describe(self) -> str:
        """ "200", "404", "401 unauthorized", "unreachable: connection refused", ..."""
        if self.status is None:
            return self.error or UNEXPECTED
        if self.error is None:
            return str(self.status)
        return f"{self.status} {self.error}"
