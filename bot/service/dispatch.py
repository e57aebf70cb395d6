"""Run every handler that matches a delivery, each isolated from the others.

One handler's failure is logged and makes the delivery fail (so the inbox
retries it), but it never stops the other handlers; handlers that already
succeeded are remembered in the store and skipped on the retry.

Routing is bound to the delivery's source (``bot.core.sources``): an event name is
only heard from the source whose secret signed it. A permanent failure (a bad
payload, say) is one log line: its reason is the whole story, and a traceback
would only bury it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from gidgethub import routing, sansio

from bot.context.handler_ids import Handler, handler_name
from bot.context.services import Services
from bot.core import log_context, metrics
from bot.core.delivery_memo import delivery_memo
from bot.core.errors import (
    BotError,
    PermanentError,
    TransientError,
    is_transient,
    retry_after,
    unforeseen,
)
from bot.core.sources import RECONCILE_EVENT, REFUSED_EVENT, routed_event
from bot.service.delivery_watch import payload_repository
from bot.store.protocol import Delivery

log = logging.getLogger(__name__)

ERROR_NOT_JSON = "delivery body is not a JSON object"
ERROR_UNROUTABLE = "a {event} delivery whose fields cannot be routed (e.g. a non-string action)"
ERROR_HANDLERS_FAILED = "{count} handler(s) failed: {details}"
LOG_FAILED = "handler %s failed on delivery %s"

# Returns the handlers that completed but are not recorded yet: the inbox records them
# with the delivery's end, in one transaction.
Dispatcher = Callable[[Delivery], Awaitable[Sequence[str]]]


def build_dispatcher(routers: Sequence[routing.Router], services: Services) -> Dispatcher:
    router = routing.Router(*routers)

    async def dispatch(delivery: Delivery) -> Sequence[str]:
        event = _event_of(delivery)
        try:
            handlers = sorted(router.fetch(event), key=handler_name)
        except TypeError as exc:  # e.g. an "action" that is a list: unhashable
            raise PermanentError(ERROR_UNROUTABLE.format(event=event.event)) from exc
        if not handlers:
            return ()
        # The handlers share the reads of one moment; the flows deep under them count
        # into this app's metrics (see ``bot.core.metrics.bound``).
        repository = payload_repository(delivery.source, event.data)
        with (
            delivery_memo(),
            metrics.bound(services.metrics),
            log_context.bound(repository=repository),
        ):
            completed = await _run_each_once(handlers, event, delivery, services)
        if event.event == RECONCILE_EVENT and repository is not None:
            services.metrics.reconciled(repository, services.clock())
        return completed

    return dispatch


def build_wants(routers: Sequence[routing.Router]) -> Callable[[str, str, Mapping[str, Any]], bool]:
    """Whether any handler of ``routers`` takes a delivery, asked at intake: one no handler
    wants is stored done at once, never claimed. Anything dispatch would refuse (an event
    its source cannot send, an unroutable payload) is "wanted", so dispatch records why."""
    router = routing.Router(*routers)

    def wants(source: str, event: str, payload: Mapping[str, Any]) -> bool:
        name = routed_event(source, event)
        if name is None:
            return True
        try:
            return bool(router.fetch(sansio.Event(dict(payload), event=name, delivery_id="")))
        except TypeError:
            return True

    return wants


def _event_of(delivery: Delivery) -> sansio.Event:
    """The delivery as the event its source may send, or a PermanentError saying why not."""
    try:
        # Parsed once: at intake, when this process took the delivery in.
        data = json.loads(delivery.payload) if delivery.parsed is None else delivery.parsed
    except ValueError as exc:
        raise PermanentError(ERROR_NOT_JSON) from exc
    if not isinstance(data, dict):
        raise PermanentError(ERROR_NOT_JSON)
    name = routed_event(delivery.source, delivery.event)
    if name is None:
        raise PermanentError(REFUSED_EVENT.format(source=delivery.source, event=delivery.event))
    return sansio.Event(data, event=name, delivery_id=delivery.delivery_id)


async def _run_each_once(
    handlers: Sequence[Handler], event: sansio.Event, delivery: Delivery, services: Services
) -> Sequence[str]:
    """Every handler not yet done for this delivery, each isolated from the others.

    Each completed handler is recorded before the next one runs; the last one is
    returned instead, for the inbox to record with the delivery's end (one write).
    """
    delivery_id = delivery.delivery_id
    done = delivery.handlers_done  # read by the claim, in its transaction
    if done is None:
        done = await services.store.handlers_done(delivery_id)
    failures: list[tuple[str, BaseException]] = []
    unrecorded: str | None = None
    for handler in handlers:
        handler_id = handler_name(handler)
        if handler_id in done:
            continue
        if unrecorded is not None:
            await services.store.mark_handler_done(delivery_id, unrecorded)
            unrecorded = None
        failure = await _run_one(handler, handler_id, event, services)
        if failure is not None:
            failures.append((handler_id, failure))
        else:
            unrecorded = handler_id
    if failures:
        if unrecorded is not None:  # the delivery will not end now: record it here
            await services.store.mark_handler_done(delivery_id, unrecorded)
        raise _combined(failures)
    return () if unrecorded is None else (unrecorded,)


async def _run_one(
    handler: Handler, handler_id: str, event: sansio.Event, services: Services
) -> Exception | None:
    """Run one handler, timed and counted, its lines naming it; what it raised, if anything."""
    watch = services.metrics
    watch.handler_attempts.labels(handler_id).inc()
    # perf_counter, not the services' clock: a duration, which tests' clocks do not model.
    started = time.perf_counter()
    try:
        with log_context.bound(handler=handler_id):
            await handler(event, services)
    except Exception as exc:  # isolate: one handler never stops the others
        watch.handler_failures.labels(handler_id).inc()
        _log_failure(handler_id, event.delivery_id, exc)
        return exc
    finally:
        watch.handler_duration.labels(handler_id).observe(time.perf_counter() - started)
    return None


def _log_failure(handler_id: str, delivery_id: str, exc: Exception) -> None:
    # The inbox writes the one line per failed attempt (every failed handler and its
    # reason in it) and, when it gives up, the traceback of a failure nobody foresaw;
    # here only DEBUG, for whoever wants every handler's every stack.
    log.debug(LOG_FAILED, handler_id, delivery_id, exc_info=exc)


def _combined(failures: Sequence[tuple[str, BaseException]]) -> Exception:
    details = "; ".join(f"{name}: {type(exc).__name__}: {exc}" for name, exc in failures)
    message = ERROR_HANDLERS_FAILED.format(count=len(failures), details=details)
    transient = [exc for _, exc in failures if is_transient(exc)]
    combined: BotError
    if transient:
        delays = [d for d in (retry_after(exc) for exc in transient) if d is not None]
        combined = TransientError(message, retry_after=max(delays) if delays else None)
    else:
        combined = PermanentError(message)
    # A failure nobody foresaw travels as its bug (``BotError.bug``): its traceback is
    # logged once, when the inbox records the delivery failed.
    combined.bug = next((exc for _, exc in failures if unforeseen(exc)), None)
    return combined
