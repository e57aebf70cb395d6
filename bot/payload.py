"""Reading webhook payloads defensively: a missing field is a clear, permanent error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.errors import PermanentError

ERROR_MISSING_FIELD = "payload has no {path} (or it is not a {kind})"


def field(payload: Mapping[str, Any], path: str, kind: type[Any] = str) -> Any:
    """``payload["a"]["b"]`` for ``path="a.b"``, checked to be a ``kind``."""
    value: Any = payload
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise PermanentError(ERROR_MISSING_FIELD.format(path=path, kind=kind.__name__))
    return value
