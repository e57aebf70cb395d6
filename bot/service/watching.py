"""The operator's views: ``GET /metrics`` (Prometheus text) and ``GET /readyz``.

``/healthz`` (in ``webhooks``) stays "the process answers"; these two read the store,
so they live beside the app's other services (``Watch``, set when the app starts).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import web

from bot.context.services import Services
from bot.core import metrics as outcomes
from bot.core.metrics import CONTENT_TYPE, PinLag, StoreFacts
from bot.service.readiness import Readiness
from bot.store.kinds import Kind

log = logging.getLogger(__name__)

READY = "ready"
NOT_READY = "not ready"
LOG_INBOX_UNREAD = "/metrics: could not read the inbox's depth; left out"
LOG_PINS_UNREAD = "/metrics: could not read the pins' lag; left out"
LOG_NOT_READY = "not ready: %s"


@dataclass(frozen=True)
class Watch:
    services: Services
    readiness: Readiness


WATCH = web.AppKey("watch", Watch)


async def metrics_view(request: web.Request) -> web.Response:
    services = request.app[WATCH].services
    inbox = await _inbox(services)
    # The database away: the inbox's read said so (one line); the pins would only repeat it.
    pins = await _pins(services) if inbox is not None else None
    body = services.metrics.render(StoreFacts(inbox=inbox, pins=pins))
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def _inbox(services: Services) -> tuple[int, int, float] | None:
    try:
        stats = await services.store.inbox_stats()
    except Exception:  # a scrape still shows the counters when the database is down
        log.warning(LOG_INBOX_UNREAD, exc_info=True)
        return None
    oldest = stats.oldest_queued_at
    age = 0.0 if oldest is None else max(services.clock() - oldest, 0.0)
    return stats.queued, stats.running, age


async def _pins(services: Services) -> Sequence[PinLag] | None:
    """Each served repository's pins, from the documents the bump flow writes for the
    dashboard as it reads upstream: no request to GitHub, and the same on every replica."""
    try:
        docs = await services.store.list_state(Kind.DASHBOARD_PIN)
    except Exception:
        log.warning(LOG_PINS_UNREAD, exc_info=True)
        return None
    served = set(services.settings.repositories)
    now = services.clock()
    lags = []
    for key, doc in docs:
        repository, _, pin = key.rpartition("#")
        behind = doc.get("behind")
        if repository not in served or not isinstance(behind, int):
            continue
        oldest = doc.get("oldest_unrolled_at")
        age = max(now - oldest, 0.0) if isinstance(oldest, int | float) and behind else 0.0
        lags.append(PinLag(repository, pin, behind, age))
    return lags


async def readyz(request: web.Request) -> web.Response:
    failing = await request.app[WATCH].readiness.failing()
    if failing:
        log.warning(LOG_NOT_READY, failing)
        return web.json_response({"status": NOT_READY, "failing": failing}, status=503)
    return web.json_response({"status": READY})


def count_answer(
    services: Services, source: str, response: web.StreamResponse, seconds: float
) -> None:
    """A webhook's answer: a 202 timed, a refusal (4xx) counted with its unverified event
    name not used."""
    if response.status == 202:
        services.metrics.intake(source, seconds)
    elif 400 <= response.status < 500:
        services.metrics.delivery(source, outcomes.UNVERIFIED, outcomes.REJECTED)
