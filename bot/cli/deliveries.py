"""``followup-bot deliveries``: the operator's view of the inbox, and replay.

``list`` and ``show`` open the database read-only (no lock, no migration, no
file created on a wrong path), so they are safe next to a running service.
``replay`` writes one row in one short transaction; the service's workers look
at the store every few seconds (``bot.service.inbox.EXTERNAL_POLL_INTERVAL``) and run
it, or the next service to start does. Everything goes through the store
protocol, so a future backend gets these commands for free.

Output is formatted in full before the first write, so a reader that goes away
(``| head``) only ever interrupts printing, never the store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from bot.cli.store_access import ERROR, EXIT_OK, EXIT_REFUSED, emit, guarded, with_store
from bot.config.messages import plural
from bot.store.access import Access, redacted
from bot.store.protocol import DeliveryRecord, DeliveryStatus, Requeue, Store

NO_SUCH_DELIVERY = "no delivery {id} in {path}"
NOTHING_LISTED = "No deliveries."
NO_FAILED = "No failed deliveries."
REPLAYED = (
    "requeued {id} (was {previous}): a running serve runs it within a few seconds,"
    " otherwise the next one to start"
)
HANDLERS_SKIPPED = "handlers that already completed are skipped: {names}"
HANDLERS_FORGOTTEN = "forgot {count} completed handler run(s): every handler runs again"
REFUSE_PENDING = "delivery {id} is {status}: it will run anyway; nothing to replay"
REFUSE_DONE = "delivery {id} is done; pass --force to run it again (every handler runs again)"
NONE = "none"
# Only the first line, cut here: a list row stays one line; ``show`` has the rest.
LIST_ERROR_WIDTH = 80

LIST_COLUMNS = ("ID", "STATUS", "ATTEMPTS", "RECEIVED (UTC)", "SOURCE", "EVENT", "SUBJECT", "ERROR")


@dataclass(frozen=True)
class Shown:
    """One delivery as ``show`` reports it."""

    record: DeliveryRecord
    handlers_done: frozenset[str]


def timestamp(epoch: float) -> str:
    """``2026-01-02T03:04:05Z``: UTC, to the second."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _short_error(error: str | None) -> str:
    if not error:
        return ""
    first = error.splitlines()[0]
    return first if len(first) <= LIST_ERROR_WIDTH else first[: LIST_ERROR_WIDTH - 1] + "…"


def summary(record: DeliveryRecord) -> dict[str, Any]:
    """The JSON form of one delivery, without its payload."""
    delivery = record.delivery
    return {
        "id": delivery.delivery_id,
        "status": record.status.value,
        "source": delivery.source,
        "event": delivery.event,
        "subject": delivery.subject,
        "attempts": delivery.attempts,
        "received_at": timestamp(delivery.received_at),
        "next_attempt_at": (
            timestamp(record.next_attempt_at) if record.status is DeliveryStatus.QUEUED else None
        ),
        "last_error": record.last_error,
        "payload_bytes": len(delivery.payload),
    }


def format_list(records: list[DeliveryRecord], *, failed: bool) -> str:
    if not records:
        return NO_FAILED if failed else NOTHING_LISTED
    rows = [LIST_COLUMNS] + [
        (
            r.delivery.delivery_id,
            r.status.value,
            str(r.delivery.attempts),
            timestamp(r.delivery.received_at),
            r.delivery.source,
            r.delivery.event,
            r.delivery.subject,
            _short_error(r.last_error),
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(LIST_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def format_show(shown: Shown, *, payload: bool) -> str:
    record = shown.record
    fields = summary(record)
    lines = [
        ("id", fields["id"]),
        ("status", fields["status"]),
        ("source", fields["source"]),
        ("event", fields["event"]),
        ("subject", fields["subject"]),
        ("attempts", str(fields["attempts"])),
        ("received", fields["received_at"]),
    ]
    if fields["next_attempt_at"] is not None:
        lines.append(("next attempt", fields["next_attempt_at"]))
    lines += [
        ("last error", record.last_error or NONE),
        ("handlers done", ", ".join(sorted(shown.handlers_done)) or NONE),
        ("payload", plural(fields["payload_bytes"], "byte")),
    ]
    width = max(len(name) for name, _ in lines) + 1
    indent = "\n" + " " * (width + 1)  # a multi-line error stays in its column
    text = "\n".join(
        f"{name + ':':<{width}} " + value.replace("\n", indent) for name, value in lines
    )
    if payload:
        text += "\n\n" + _payload_text(record)
    return text


def show_json(shown: Shown, *, payload: bool) -> dict[str, Any]:
    document = summary(shown.record)
    document["handlers_done"] = sorted(shown.handlers_done)
    if payload:
        document["payload"] = _payload_text(shown.record)
    return document


def _payload_text(record: DeliveryRecord) -> str:
    # Stored payloads are JSON, hence UTF-8; a stray byte is shown, not fatal.
    return record.delivery.payload.decode("utf-8", errors="replace")


def format_replay(delivery_id: str, outcome: Requeue, handlers_done: frozenset[str]) -> str:
    assert outcome.previous is not None
    lines = [REPLAYED.format(id=delivery_id, previous=outcome.previous.value)]
    if outcome.handlers_forgotten:
        lines.append(HANDLERS_FORGOTTEN.format(count=outcome.handlers_forgotten))
    elif handlers_done:
        lines.append(HANDLERS_SKIPPED.format(names=", ".join(sorted(handlers_done))))
    return "\n".join(lines)


def refusal(delivery_id: str, outcome: Requeue, database: str) -> str:
    if outcome.previous is None:
        return NO_SUCH_DELIVERY.format(id=delivery_id, path=redacted(database))
    if outcome.previous is DeliveryStatus.DONE:
        return REFUSE_DONE.format(id=delivery_id)
    return REFUSE_PENDING.format(id=delivery_id, status=outcome.previous.value)


async def _list(store: Store, failed: bool, limit: int) -> list[DeliveryRecord]:
    return await store.list_deliveries(DeliveryStatus.FAILED if failed else None, limit)


async def _show(store: Store, delivery_id: str) -> Shown | None:
    record = await store.get_delivery(delivery_id)
    if record is None:
        return None
    return Shown(record, await store.handlers_done(delivery_id))


async def _replay(
    store: Store, delivery_id: str, force: bool, now: float
) -> tuple[Requeue, frozenset[str]]:
    outcome = await store.requeue(delivery_id, now, include_done=force)
    done = await store.handlers_done(delivery_id) if outcome.requeued else frozenset()
    return outcome, done


def _run(args: argparse.Namespace, out: TextIO, err: TextIO, now: float) -> int:
    database: str = args.database
    action: str = args.action
    if action == "list":
        records = asyncio.run(
            with_store(database, Access.READ, lambda s: _list(s, args.failed, args.limit))
        )
        if args.json:
            emit(out, json.dumps([summary(r) for r in records], indent=2))
        else:
            emit(out, format_list(records, failed=args.failed))
        return EXIT_OK
    delivery_id: str = args.delivery_id
    if action == "show":
        shown = asyncio.run(with_store(database, Access.READ, lambda s: _show(s, delivery_id)))
        if shown is None:
            message = NO_SUCH_DELIVERY.format(id=delivery_id, path=redacted(database))
            emit(err, ERROR.format(message=message))
            return EXIT_REFUSED
        if args.json:
            emit(out, json.dumps(show_json(shown, payload=args.payload), indent=2))
        else:
            emit(out, format_show(shown, payload=args.payload))
        return EXIT_OK
    outcome, done = asyncio.run(
        with_store(database, Access.WRITE, lambda s: _replay(s, delivery_id, args.force, now))
    )
    if not outcome.requeued:
        emit(err, ERROR.format(message=refusal(delivery_id, outcome, database)))
        return EXIT_REFUSED
    emit(out, format_replay(delivery_id, outcome, done))
    return EXIT_OK


def deliveries_command(
    args: argparse.Namespace, out: TextIO, err: TextIO, *, clock: Callable[[], float] = time.time
) -> int:
    """Run ``deliveries list|show|replay``; 0, or 2 with one ``error:`` line on ``err``."""
    return guarded(lambda: _run(args, out, err, clock()), args.database, out, err)
