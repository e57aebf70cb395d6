"""Each handler's stable id: the name the store records its runs under.

Handlers mark themselves with ``@handler_id``; the dispatcher (``bot.service.dispatch``)
reads the mark. Here, below both, so a handler never imports the service that runs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

Handler = Callable[..., Awaitable[Any]]


HANDLER_ID = "followup_bot_handler_id"
ERROR_NO_HANDLER_ID = "handler {name} has no explicit id: decorate it with @handler_id(...)"
H = TypeVar("H", bound=Handler)


def handler_id(name: str) -> Callable[[H], H]:
    """Give a handler the stable id the store records its runs under.

    Explicit, not the module path: moving or renaming the function must not make the
    dispatcher re-run it for deliveries in flight (``bot.store.legacy_ids`` maps the
    ids older releases recorded)."""

    def mark(handler: H) -> H:
        setattr(handler, HANDLER_ID, name)
        return handler

    return mark


def handler_name(handler: Handler) -> str:
    found = getattr(handler, HANDLER_ID, None)
    if not isinstance(found, str):
        raise TypeError(
            ERROR_NO_HANDLER_ID.format(name=f"{handler.__module__}.{handler.__qualname__}")
        )
    return found
