"""Request plumbing of the Buildkite stand-in: errors, query values, paging, byte ranges."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode

from aiohttp import web

T = TypeVar("T")

NOT_FOUND = "Not Found"
BAD_JSON = "Problems parsing JSON body"
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
_FALSE_VALUES = frozenset({"", "0", "f", "false", "off", "no"})
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class ApiError(Exception):
    """An error answer in Buildkite's shape: ``{"message": ...}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def not_found() -> ApiError:
    return ApiError(404, NOT_FOUND)


def json_response(
    body: object, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        status=status,
        body=json.dumps(body).encode(),
        content_type="application/json",
        charset="utf-8",
        headers=headers,
    )


async def read_json(request: web.Request) -> Any:
    """The JSON body, None when there is none; malformed JSON is a 400."""
    raw = await request.read()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, BAD_JSON) from exc


def values(request: web.Request, name: str) -> list[str]:
    """A filter given as ``name=a``, ``name[]=a&name[]=b`` or both."""
    return request.query.getall(name, []) + request.query.getall(f"{name}[]", [])


def flag(request: web.Request, name: str) -> bool:
    """A boolean query value, read the way Rails casts one (``true``, ``1``, ``True``...)."""
    value = request.query.get(name)
    return value is not None and value.strip().lower() not in _FALSE_VALUES


def page_params(request: web.Request) -> tuple[int, int]:
    """``(page, per_page)``; Buildkite treats a missing, zero or bad page as the first."""
    try:
        page = int(request.query.get("page") or 1)
        size = int(request.query.get("per_page") or DEFAULT_PER_PAGE)
    except ValueError:
        page, size = 1, DEFAULT_PER_PAGE
    return max(page, 1), min(max(size, 1), MAX_PER_PAGE)


def paginate(request: web.Request, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
    """One page of ``items`` and the ``Link`` header (next/last/first/prev) Buildkite sends."""
    page, size = page_params(request)
    chunk = list(items[(page - 1) * size : page * size])
    last = max((len(items) + size - 1) // size, 1)
    url = str(request.url.with_query(None))

    def at(number: int) -> str:
        # Keys sorted, as Rails writes a query; clients that parse "page=" out of the
        # URL (pybuildkite) depend on it not being the last parameter before ">".
        query = [(k, v) for k, v in request.query.items() if k not in ("page", "per_page")]
        query += [("page", str(number)), ("per_page", str(size))]
        return f"<{url}?{urlencode(sorted(query))}>"

    links = []
    if page < last:
        links += [f'{at(page + 1)}; rel="next"', f'{at(last)}; rel="last"']
    if page > 1:
        links += [f'{at(1)}; rel="first"', f'{at(page - 1)}; rel="prev"']
    return chunk, ({"Link": ", ".join(links)} if links else {})


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        decoded: Any = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        offset = decoded["offset"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise ApiError(422, "Invalid cursor") from exc
    if not isinstance(offset, int) or offset < 0:
        raise ApiError(422, "Invalid cursor")
    return offset


def cursor_page(request: web.Request, items: Sequence[T]) -> tuple[list[T], str | None]:
    """One page of ``items`` and the URL of the next one (None on the last page)."""
    _, size = page_params(request)
    offset = decode_cursor(request.query.get("cursor"))
    chunk = list(items[offset : offset + size])
    if offset + size >= len(items):
        return chunk, None
    query = [(k, v) for k, v in request.query.items() if k != "cursor"]
    query.append(("cursor", encode_cursor(offset + size)))
    return chunk, str(request.url.with_query(None)) + "?" + urlencode(query)


@dataclass(frozen=True)
class ByteRange:
    start: int
    end: int  # inclusive


class Unsatisfiable(Exception):
    """A syntactically valid range that selects nothing: answered 416."""


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The one range of ``Range: bytes=...``; None serves the whole body (as RFC 9110 allows
    for a header it does not understand, e.g. several ranges)."""
    match = _RANGE.match(header.strip()) if header else None
    if match is None:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # a suffix: the last N bytes
        length = int(last)
        if length == 0 or size == 0:
            raise Unsatisfiable
        return ByteRange(max(size - length, 0), size - 1)
    start = int(first)
    if last and int(last) < start:
        return None  # invalid: ignored, so the whole body is served
    if start >= size:
        raise Unsatisfiable
    end = int(last) if last else size - 1
    return ByteRange(start, min(end, size - 1))
