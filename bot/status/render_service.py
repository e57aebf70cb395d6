"""The status page's service section and recent activity, pure HTML like ``render``."""

from __future__ import annotations

from html import escape

from bot.status.model import ActivityRow, ServiceStatus
from bot.status.render_parts import NONE, age, code, link, table, when

HEADING_SERVICE = "Service"
HEADING_ACTIVITY = "Recent activity"
NO_ACTIVITY = "The bot has not done anything yet."
ONE_PROCESS = "1 (SQLite: one process serves)"
REPLICA = "{id} since {when}"
INBOX = "{queued} queued, {running} running"
OLDEST_NONE = "none queued"
OLDEST = "{age} ago ({when})"
TICK_NONE = "none yet"
TICK = "{when} ({age} ago), {status}"
DATABASE_UP = "reachable"
RATE_LIMIT = "{service}: {left} requests left"
RATE_LIMIT_NONE = "no answer carried a rate limit yet"
ACTIVITY_COLUMNS = ("when", "repository", "what", "links")
REPLICA_ID_SHOWN = 12

FACT_REPLICAS = "Replicas"
FACT_INBOX = "Inbox"
FACT_OLDEST = "Oldest queued delivery"
FACT_TICK = "Last reconcile tick"
FACT_DATABASE = "Database"
FACT_RATE_LIMITS = "Rate-limit headroom (this replica)"


def render_service(service: ServiceStatus, *, now: float) -> str:
    if service.replicas is None:
        replicas = escape(ONE_PROCESS)
    else:
        replicas = f"{len(service.replicas)}: " + ", ".join(
            escape(
                REPLICA.format(id=seen.replica_id[:REPLICA_ID_SHOWN], when=when(seen.started_at))
            )
            for seen in service.replicas
        )
    oldest = (
        OLDEST_NONE
        if service.oldest_queued_at is None
        else OLDEST.format(
            age=age(now - service.oldest_queued_at), when=when(service.oldest_queued_at)
        )
    )
    tick = (
        TICK_NONE
        if service.last_tick_at is None
        else TICK.format(
            when=when(service.last_tick_at),
            age=age(now - service.last_tick_at),
            status=service.last_tick_status or NONE,
        )
    )
    limits = (
        "; ".join(
            RATE_LIMIT.format(service=name, left=int(left)) for name, left in service.rate_limits
        )
        or RATE_LIMIT_NONE
    )
    facts = [
        (FACT_REPLICAS, replicas),
        (FACT_INBOX, escape(INBOX.format(queued=service.queued, running=service.running))),
        (FACT_OLDEST, escape(oldest)),
        (FACT_TICK, escape(tick)),
        (FACT_DATABASE, escape(DATABASE_UP)),
        (FACT_RATE_LIMITS, escape(limits)),
    ]
    items = "".join(f"<dt>{escape(name)}</dt><dd>{value}</dd>" for name, value in facts)
    return (
        f'<section id="service"><h2>{escape(HEADING_SERVICE)}</h2>'
        f'<dl class="facts">{items}</dl></section>'
    )


def render_activity(rows: tuple[ActivityRow, ...]) -> str:
    return (
        f'<section id="activity"><h2>{escape(HEADING_ACTIVITY)}</h2>'
        + table("activity", ACTIVITY_COLUMNS, rows, _activity, NO_ACTIVITY)
        + "</section>"
    )


def _activity(row: ActivityRow) -> list[str]:
    shown = " ".join(link(item) for item in row.links) or NONE
    return [escape(when(row.at)), code(row.repo), escape(row.what), shown]
