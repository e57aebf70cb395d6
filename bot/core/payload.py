"""Reading webhook payloads defensively: a bad field is one clear, permanent error.

Handlers read every payload field through these helpers, never with ``[...]``
or ``.get(...)`` chains: a field that is missing or of the wrong type (a
``"sender": "x"``, a ``"pull_request": null``, a ``"body": 5``) then fails the
delivery with one ``PermanentError`` naming the field, instead of an
``AttributeError``, ``KeyError`` or ``TypeError`` somewhere inside a handler.

Paths are dotted object keys (``"comment.user.login"``). JSON ``null`` and an
absent key are the same thing: absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, overload

from bot.core.errors import PermanentError

T = TypeVar("T")
Payload = Mapping[str, Any]

ERROR_MISSING_FIELD = "payload has no {path}"
ERROR_WRONG_TYPE = "payload field {path} is {actual}, not {kind}"

_KIND_NAMES: dict[type[Any], str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    dict: "an object",
    list: "an array",
}
_OBJECT = "an object"


def kind_name(kind: type[Any]) -> str:
    """How messages name a JSON type: ``"an object"`` for ``dict`` and so on."""
    return _KIND_NAMES.get(kind, kind.__name__)


def describe(value: object) -> str:
    """The JSON type of ``value``, as messages name it."""
    if value is None:
        return "null"
    for kind in (bool, int, float, str):  # bool first: True is an int too
        if isinstance(value, kind):
            return _KIND_NAMES[kind]
    if isinstance(value, Mapping):
        return _OBJECT
    if isinstance(value, list):
        return _KIND_NAMES[list]
    return type(value).__name__


def _is_kind(value: object, kind: type[Any]) -> bool:
    if isinstance(value, bool) and kind is not bool:
        return False  # JSON true is not a number
    if kind is float:
        return isinstance(value, int | float)  # JSON does not tell 1 from 1.0
    return isinstance(value, kind)


def _wrong_type(path: str, value: object, kind: str) -> PermanentError:
    return PermanentError(ERROR_WRONG_TYPE.format(path=path, actual=describe(value), kind=kind))


def _lookup(payload: Payload, path: str, prefix: str) -> Any:
    """The value at ``path`` (None when any key on the way is absent or null); messages
    name it ``prefix + path``."""
    value: Any = payload
    parts = path.split(".")
    for index, part in enumerate(parts):
        if value is None:
            return None
        # dict first: parsed JSON is always one, and the Mapping ABC check is slow
        # (this runs a dozen times per delivery).
        if type(value) is not dict and not isinstance(value, Mapping):
            walked = parts[:index]
            where = prefix + ".".join(walked) if walked else prefix.removesuffix(".")
            raise _wrong_type(where or "(root)", value, _OBJECT)
        value = value.get(part)
    return value


@overload
def optional(payload: Payload, path: str) -> str | None: ...
@overload
def optional(payload: Payload, path: str, kind: type[T]) -> T | None: ...
def optional(payload: Payload, path: str, kind: type[Any] = str) -> Any:
    """The ``kind`` at ``path``, or None when it (or an object on the way) is absent or null.

    Present but of another type (an object on the way included) is a ``PermanentError``.
    """
    return _optional(payload, path, kind)


def _optional(payload: Payload, path: str, kind: type[Any], prefix: str = "") -> Any:
    value = _lookup(payload, path, prefix)
    if value is not None and not _is_kind(value, kind):
        raise _wrong_type(prefix + path, value, kind_name(kind))
    return value


@overload
def field(payload: Payload, path: str) -> str: ...
@overload
def field(payload: Payload, path: str, kind: type[T]) -> T: ...
def field(payload: Payload, path: str, kind: type[Any] = str) -> Any:
    """``payload["a"]["b"]`` for ``path="a.b"``, checked to be a ``kind``.

    Absent or null is ``ERROR_MISSING_FIELD``, another type ``ERROR_WRONG_TYPE``
    (both ``PermanentError``).
    """
    return _required(payload, path, kind)


def _required(payload: Payload, path: str, kind: type[Any], prefix: str = "") -> Any:
    value = _optional(payload, path, kind, prefix)
    if value is None:
        raise PermanentError(ERROR_MISSING_FIELD.format(path=prefix + path))
    return value


@overload
def each(payload: Payload, path: str, item_path: str) -> list[str]: ...
@overload
def each(payload: Payload, path: str, item_path: str, kind: type[T]) -> list[T]: ...
def each(payload: Payload, path: str, item_path: str, kind: type[Any] = str) -> list[Any]:
    """``item_path`` of every object in the array at ``path`` (an absent or null array is
    empty), each checked like ``field``; messages name the item (``issue.labels[2].name``)."""
    values: list[Any] = []
    for index, item in enumerate(optional(payload, path, list) or []):
        where = f"{path}[{index}]"
        if not isinstance(item, Mapping):
            raise _wrong_type(where, item, _OBJECT)
        values.append(_required(item, item_path, kind, f"{where}."))
    return values


def user_login(payload: Payload, path: str) -> str | None:
    """The ``login`` of the GitHub user object at ``path``; None when the object is null
    or absent (GitHub sends ``"user": null`` for a deleted account)."""
    if optional(payload, path, dict) is None:
        return None
    return field(payload, f"{path}.login")
