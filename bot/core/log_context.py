"""Log lines that say which delivery, event, repository, handler and attempt they are about.

The inbox binds the delivery's fields when it starts an attempt and the dispatcher
binds the repository and each handler as it runs; a ``logging.Filter`` on the root
handler copies whatever is bound onto every record, so no call site passes them.
Contextvars, because a worker's attempt is one asyncio task: what it binds is seen by
everything it awaits and by no other worker.

``FOLLOWUP_BOT_LOG_FORMAT`` picks the output: ``text`` (one human line, the fields
appended in brackets) or ``json`` (one JSON object per line, the fields as keys, and
nothing else on the stream: Python's warnings and an uncaught exception go through
logging too). Both start with the time in ISO 8601, in UTC with its offset.

Part of the foundation: it imports nothing of the bot.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType, TracebackType
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter

FORMAT_TEXT = "text"
FORMAT_JSON = "json"
LOG_FORMATS = (FORMAT_TEXT, FORMAT_JSON)

# The record attributes (and JSON keys) the filter sets, in the order text shows them.
FIELDS = ("delivery_id", "event", "repository", "handler", "attempt")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JSON_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

_bound: contextvars.ContextVar[Mapping[str, object]] = contextvars.ContextVar(
    "followup_bot_log_context", default=MappingProxyType({})
)


@contextlib.contextmanager
def bound(**fields: object) -> Iterator[None]:
    """Add ``fields`` (those not None) to every record logged within the block."""
    known = {name: value for name, value in fields.items() if value is not None}
    token = _bound.set({**_bound.get(), **known})
    try:
        yield
    finally:
        _bound.reset(token)


def note(**fields: object) -> None:
    """Add ``fields`` (those not None) to the records logged from here to the end of the
    innermost ``bound`` block (for what is learnt halfway: a webhook's repository, once
    its body has been read and verified)."""
    known = {name: value for name, value in fields.items() if value is not None}
    if known:
        _bound.set({**_bound.get(), **known})


def current() -> Mapping[str, object]:
    return _bound.get()


def iso_time(created: float) -> str:
    """A record's time as ISO 8601 in UTC, offset included, to the millisecond."""
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")


class ContextFilter(logging.Filter):
    """Copies the bound fields onto each record (only the known ones: no nulls)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _bound.get().items():
            setattr(record, name, value)
        return True


class TextFormatter(logging.Formatter):
    """The plain line, then ``[delivery_id=... handler=...]`` when anything is bound."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return iso_time(record.created)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        shown = [f"{name}={getattr(record, name)}" for name in FIELDS if hasattr(record, name)]
        if not shown:
            return line
        first, newline, rest = line.partition("\n")  # after the message, before a traceback
        return f"{first} [{' '.join(shown)}]{newline}{rest}"


class JsonLineFormatter(JsonFormatter):
    """One JSON object a line, its ``asctime`` in ISO 8601."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return iso_time(record.created)


def handler_for(log_format: str, stream: TextIO | None = None) -> logging.Handler:
    """A stream handler writing ``log_format`` lines, the context filter on it."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    if log_format == FORMAT_JSON:
        handler.setFormatter(JsonLineFormatter(JSON_FORMAT))
    else:
        handler.setFormatter(TextFormatter(TEXT_FORMAT))
    # On the handler, not a logger: a handler's filters see the records every
    # module's logger propagates to the root; a logger's see only its own.
    handler.addFilter(ContextFilter())
    return handler


LOG_UNCAUGHT = "stopped by an uncaught exception"


def configure(level: str, log_format: str) -> None:
    """The root logger of ``followup-bot serve``: one handler, read once at start-up."""
    logging.basicConfig(level=level, handlers=[handler_for(log_format)], force=True)
    logging.captureWarnings(True)
    if log_format == FORMAT_JSON:
        sys.excepthook = _log_uncaught


def _log_uncaught(
    kind: type[BaseException], exc: BaseException, traceback: TracebackType | None
) -> None:
    logging.getLogger(__name__).critical(LOG_UNCAUGHT, exc_info=(kind, exc, traceback))
