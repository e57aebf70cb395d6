"""Job logs as Buildkite serves them: JSON, raw text (with byte ranges) or HTML."""

from __future__ import annotations

import html
import re
from typing import Literal

from aiohttp import web

from sandbox.buildkite_http import ByteRange, Unsatisfiable, json_response, parse_range

LogFormat = Literal["json", "text", "html"]

# The agent prefixes each line with "ESC _bk;t=<ms> BEL"; headers start "---", "+++" or "~~~".
_HEADER = re.compile(rb"^(?:\x1b_bk;t=(\d+)\x07)?(?:---|\+\+\+|~~~) ")
_ESCAPES = re.compile(r"\x1b_bk;[^\x07]*\x07|\x1b\[[0-9;?]*[A-Za-z]")


def wanted_format(request: web.Request, suffix: str) -> LogFormat:
    """``.txt``/``.html`` in the path win; otherwise the first type in ``Accept``."""
    if suffix == ".txt":
        return "text"
    if suffix == ".html":
        return "html"
    accept = request.headers.get("Accept", "").split(",")[0].split(";")[0].strip().lower()
    if accept == "text/plain":
        return "text"
    if accept == "text/html":
        return "html"
    return "json"


def header_times(log: bytes) -> list[int]:
    """Millisecond timestamps of the section headers (the lines Buildkite folds)."""
    times = []
    for line in log.splitlines():
        match = _HEADER.match(line)
        if match and match.group(1):
            times.append(int(match.group(1)))
    return times


def as_json(log: bytes, url: str) -> web.Response:
    return json_response(
        {
            "url": url,
            "content": log.decode(errors="replace"),
            "size": len(log),
            "header_times": header_times(log),
        }
    )


def as_html(log: bytes) -> web.Response:
    # Buildkite turns ANSI colours into spans; the stand-in drops them and escapes the text.
    text = _ESCAPES.sub("", log.decode(errors="replace"))
    return web.Response(text=html.escape(text), content_type="text/html")


def as_text(request: web.Request, log: bytes) -> web.Response:
    """The raw bytes, verbatim; one ``Range`` (explicit or suffix) gives a 206."""
    headers = {"Accept-Ranges": "bytes"}
    try:
        chosen: ByteRange | None = parse_range(request.headers.get("Range"), len(log))
    except Unsatisfiable:
        headers["Content-Range"] = f"bytes */{len(log)}"
        return web.Response(status=416, headers=headers)
    if chosen is None:
        return web.Response(body=log, content_type="text/plain", charset="utf-8", headers=headers)
    headers["Content-Range"] = f"bytes {chosen.start}-{chosen.end}/{len(log)}"
    return web.Response(
        status=206,
        body=log[chosen.start : chosen.end + 1],
        content_type="text/plain",
        charset="utf-8",
        headers=headers,
    )


def respond(request: web.Request, log: bytes, url: str, suffix: str) -> web.Response:
    kind = wanted_format(request, suffix)
    if kind == "text":
        return as_text(request, log)
    if kind == "html":
        return as_html(log)
    return as_json(log, url)
