"""The operator's views: ``GET /metrics`` (Prometheus text) and ``GET /readyz``.

``/healthz`` (in ``webhooks``) stays "the process answers"; these two read the store,
so they live beside the app's other services (``Watch``, set when the app starts).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from aiohttp import web

from bot.service import metrics as outcomes
from bot.service.metrics import CONTENT_TYPE
from bot.service.readiness import Readiness
from bot.service.services import Services

log = logging.getLogger(__name__)

READY = "ready"
NOT_READY = "not ready"
LOG_INBOX_UNREAD = "/metrics: could not read the inbox's depth; left out"
LOG_NOT_READY = "not ready: %s"


@dataclass(frozen=True)
class Watch:
    services: Services
    readiness: Readiness


WATCH = web.AppKey("watch", Watch)


async def metrics_view(request: web.Request) -> web.Response:
    services = request.app[WATCH].services
    inbox: tuple[int, int, float] | None = None
    try:
        stats = await services.store.inbox_stats()
    except Exception:  # a scrape still shows the counters when the database is down
        log.warning(LOG_INBOX_UNREAD, exc_info=True)
    else:
        oldest = stats.oldest_queued_at
        age = 0.0 if oldest is None else max(services.clock() - oldest, 0.0)
        inbox = (stats.queued, stats.running, age)
    body = services.metrics.render(inbox)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def readyz(request: web.Request) -> web.Response:
    failing = await request.app[WATCH].readiness.failing()
    if failing:
        log.warning(LOG_NOT_READY, failing)
        return web.json_response({"status": NOT_READY, "failing": failing}, status=503)
    return web.json_response({"status": READY})


def count_refused(services: Services, source: str, response: web.StreamResponse) -> None:
    """A webhook the view refused (4xx): counted, its unverified event name not used."""
    if 400 <= response.status < 500:
        services.metrics.delivery(source, outcomes.UNVERIFIED, outcomes.REJECTED)
