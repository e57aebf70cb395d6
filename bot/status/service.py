"""The status page's service section: replicas, the inbox, the last tick, rate limits.

Read from the store (one read each, no GitHub or Buildkite call) and from this
replica's metrics, where the clients note the rate limit each answer announced.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from bot.core.metrics import RATE_LIMIT_HEADERS, Metrics
from bot.status.model import ServiceStatus
from bot.store.protocol import Store

# The reconcile ticks' delivery ids (bot.service.reconcile): ``reconcile:<repo>:<bucket>``.
TICK_PREFIX = "reconcile:"
RATE_LIMIT_METRIC = "followup_bot_rate_limit_remaining"


async def read_service(store: Store, *, rate_limits: Mapping[str, float]) -> ServiceStatus:
    """No replica listed: the backend serves one process (SQLite), which lists none."""
    stats, tick, replicas = await asyncio.gather(
        store.inbox_stats(), store.latest_delivery(TICK_PREFIX), store.list_replicas()
    )
    return ServiceStatus(
        replicas=tuple(replicas) or None,
        queued=stats.queued,
        running=stats.running,
        oldest_queued_at=stats.oldest_queued_at,
        last_tick_at=None if tick is None else tick.delivery.received_at,
        last_tick_status=None if tick is None else tick.status.value,
        rate_limits=tuple(sorted(rate_limits.items())),
    )


def rate_limit_headroom(metrics: Metrics) -> dict[str, float]:
    """Requests left per service, as its last answer to this replica said (none: no answer
    carried one yet)."""
    found: dict[str, float] = {}
    for service in RATE_LIMIT_HEADERS:
        value = metrics.registry.get_sample_value(RATE_LIMIT_METRIC, {"service": service})
        if value is not None:
            found[service] = value
    return found
