"""Run every handler that matches a delivery, each isolated from the others.

One handler's failure is logged and makes the delivery fail (so the inbox
retries it), but it never stops the other handlers; handlers that already
succeeded are remembered in the store and skipped on the retry.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from gidgethub import routing, sansio

from bot.errors import PermanentError, TransientError, is_transient, retry_after
from bot.services import Services
from bot.store import Delivery

log = logging.getLogger(__name__)

ERROR_NOT_JSON = "delivery body is not a JSON object"
ERROR_HANDLERS_FAILED = "{count} handler(s) failed: {details}"

Dispatcher = Callable[[Delivery], Awaitable[None]]
Handler = Callable[..., Awaitable[Any]]


def handler_name(handler: Handler) -> str:
    return f"{handler.__module__}.{handler.__qualname__}"


def build_dispatcher(routers: Sequence[routing.Router], services: Services) -> Dispatcher:
    router = routing.Router(*routers)

    async def dispatch(delivery: Delivery) -> None:
        try:
            data = json.loads(delivery.payload)
        except ValueError as exc:
            raise PermanentError(ERROR_NOT_JSON) from exc
        if not isinstance(data, dict):
            raise PermanentError(ERROR_NOT_JSON)
        event = sansio.Event(data, event=delivery.event, delivery_id=delivery.delivery_id)
        handlers = sorted(router.fetch(event), key=handler_name)
        if not handlers:
            return
        done = await services.store.handlers_done(delivery.delivery_id)
        failures: list[tuple[str, BaseException]] = []
        for handler in handlers:
            name = handler_name(handler)
            if name in done:
                continue
            try:
                await handler(event, services)
            except Exception as exc:  # isolate: one handler never stops the others
                log.exception("handler %s failed on delivery %s", name, delivery.delivery_id)
                failures.append((name, exc))
            else:
                await services.store.mark_handler_done(delivery.delivery_id, name)
        if failures:
            raise _combined(failures)

    return dispatch


def _combined(failures: Sequence[tuple[str, BaseException]]) -> Exception:
    details = "; ".join(f"{name}: {type(exc).__name__}: {exc}" for name, exc in failures)
    message = ERROR_HANDLERS_FAILED.format(count=len(failures), details=details)
    transient = [exc for _, exc in failures if is_transient(exc)]
    if transient:
        delays = [d for d in (retry_after(exc) for exc in transient) if d is not None]
        return TransientError(message, retry_after=max(delays) if delays else None)
    return PermanentError(message)
