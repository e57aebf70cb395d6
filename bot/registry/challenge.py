"""``WWW-Authenticate`` challenges (RFC 7235), parsed without I/O.

A registry answers an unauthenticated request with 401 and says how to authenticate:
``Bearer realm="…",service="…",scope="…"`` (get a token from ``realm`` first) or
``Basic realm="…"`` (answered by ``basic_authorization``). A header may carry several
challenges, and a response several headers. The parser is lenient: at the first thing
it cannot read it keeps what it has, because a registry's odd header must end in
"unauthorized", never in an exception.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(.)")
_BLANKS = " \t"
_SEPARATORS = " \t,"


@dataclass(frozen=True)
class Challenge:
    """One challenge: its scheme, lower-cased, and its parameters (names lower-cased)."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)

    def param(self, name: str) -> str | None:
        return self.params.get(name)


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _value(text: str, pos: int) -> tuple[str, int] | None:
    """A parameter's value at ``pos`` (a token or a quoted string) and where it ends."""
    quoted = _QUOTED.match(text, pos)
    if quoted is not None:
        return _ESCAPE.sub(r"\1", quoted.group(1)), quoted.end()
    token = _TOKEN.match(text, pos)
    if token is not None:
        return token.group(), token.end()
    return None


def parse_challenges(header: str) -> list[Challenge]:
    """Every challenge of one header value, in order."""
    found: list[Challenge] = []
    scheme: str | None = None
    params: dict[str, str] = {}
    pos = _skip(header, 0, _SEPARATORS)
    while pos < len(header):
        token = _TOKEN.match(header, pos)
        if token is None:
            break
        after = _skip(header, token.end(), _BLANKS)
        if scheme is not None and header.startswith("=", after):
            value = _value(header, _skip(header, after + 1, _BLANKS))
            if value is None:
                break
            # The first of a repeated parameter wins, as with any header read once.
            params.setdefault(token.group().lower(), value[0])
            pos = value[1]
        else:
            if scheme is not None:
                found.append(Challenge(scheme, params))
            scheme, params = token.group().lower(), {}
            pos = token.end()
        pos = _skip(header, pos, _SEPARATORS)
    if scheme is not None:
        found.append(Challenge(scheme, params))
    return found


def usable_challenge(headers: Iterable[str]) -> Challenge | None:
    """The challenge to answer: a Bearer one with a realm first, else a Basic one, else None."""
    challenges = [c for header in headers for c in parse_challenges(header)]
    for challenge in challenges:
        if challenge.scheme == "bearer" and challenge.param("realm"):
            return challenge
    for challenge in challenges:
        if challenge.scheme == "basic":
            return challenge
    return None


def basic_authorization(username: str, password: str) -> str:
    """The ``Authorization`` value answering a Basic challenge (RFC 7617, UTF-8)."""
    pair = f"{username}:{password}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")
