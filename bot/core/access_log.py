"""The HTTP access log: one line per request, probes quiet, no secret in it.

aiohttp's own access logger writes the request line as sent, query string and all, so a
token someone put in a URL (``/status?token=...``) would land in the log, and the
Referer header can carry another page's. Here a query parameter whose name says it
holds a secret is written as ``***``; no header is written but the User-Agent (never
Authorization, never a cookie).

Kubernetes probes and Prometheus scrapes (``PROBE_PATHS``) hit the service every few
seconds and say nothing an operator reads: their lines are DEBUG. So is a webhook's 202
(``WEBHOOK_PATHS``): the intake writes its own line for each delivery it stores, with the
delivery's id, event and repository, and a second one per delivery would only double the
log. Every other request's line is INFO, a webhook refused among them. A failing probe
still shows: ``/readyz`` logs a WARNING of its own.

Part of the foundation: it imports nothing of the bot.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
WEBHOOK_PATHS = frozenset({"/webhooks/github", "/webhooks/buildkite"})
SCRUBBED = "***"
# Query parameter names whose values are never logged (any case): any name with "token",
# "secret" or "passw" in it, and a few whole names that hold credentials.
SECRET_NAME = re.compile(
    r"token|secret|passw|^(?:key|api[_-]?key|sig|signature|auth|authorization|code|session)$",
    re.I,
)

# remote, method, path and scrubbed query, HTTP version, status, body size, seconds, agent
ACCESS_LINE = '%s "%s %s HTTP/%d.%d" %d %d %.3fs "%s"'


def scrub_query(query: str) -> str:
    """``query`` (raw, as sent) with the value of every secret-named parameter replaced."""
    if not query:
        return query
    parts = []
    for part in query.split("&"):
        name, equals, _ = part.partition("=")
        if equals and SECRET_NAME.search(unquote_plus(name)):
            part = f"{name}={SCRUBBED}"
        parts.append(part)
    return "&".join(parts)


def shown_target(raw_path: str) -> str:
    """The request target as the log shows it: the path, and the query scrubbed."""
    path, question, query = raw_path.partition("?")
    return f"{path}{question}{scrub_query(query)}"


class AccessLogger(AbstractAccessLogger):
    """What ``followup-bot serve`` gives aiohttp as its ``access_log_class``."""

    @property
    def enabled(self) -> bool:
        # DEBUG lines are only wanted when INFO ones are, so INFO decides.
        return self.logger.isEnabledFor(logging.INFO)

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        level = logging.DEBUG if _quiet(request.path, response.status) else logging.INFO
        if not self.logger.isEnabledFor(level):
            return
        self.logger.log(
            level,
            ACCESS_LINE,
            request.remote or "-",
            request.method,
            shown_target(request.raw_path),
            request.version.major,
            request.version.minor,
            response.status,
            response.body_length,
            time,
            request.headers.get("User-Agent", "-"),
        )


def _quiet(path: str, status: int) -> bool:
    return path in PROBE_PATHS or (status == 202 and path in WEBHOOK_PATHS)
