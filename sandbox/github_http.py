"""The request plumbing the stand-in's handlers share: routes, errors, paging."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlencode

from aiohttp import web

from sandbox.github_auth import InstallationToken
from sandbox.github_state import Repo

T = TypeVar("T")
Query = dict[str, str | list[str]]
AuthKind = Literal["jwt", "token", "optional"]

NOT_FOUND = "Not Found"
VALIDATION_FAILED = "Validation Failed"
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


class ApiError(Exception):
    """An error answer, in GitHub's JSON shape."""

    def __init__(
        self, status: int, message: str, errors: list[dict[str, Any]] | list[str] | None = None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors


def not_found() -> ApiError:
    return ApiError(404, NOT_FOUND)


@dataclass
class Reply:
    status: int
    body: object | None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Call:
    """One authenticated API request, as handlers see it."""

    request: web.Request
    operation_id: str
    params: dict[str, str]
    query: Query
    body: Any
    repo: Repo | None
    token: InstallationToken | None

    @property
    def the_repo(self) -> Repo:
        if self.repo is None:
            raise not_found()
        return self.repo

    def arg(self, name: str, default: str | None = None) -> str | None:
        value = self.query.get(name, default)
        return value[-1] if isinstance(value, list) else value

    def field(self, name: str, default: Any = None) -> Any:
        return self.body.get(name, default) if isinstance(self.body, dict) else default


Handler = Callable[[Call], Awaitable[Reply]]


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    operation_id: str
    handler: Handler
    auth: AuthKind
    pattern: re.Pattern[str]


@functools.cache  # every stand-in routes the same templates
def _compile(template: str) -> re.Pattern[str]:
    # "{name}" is one path segment; "{name+}" may span several (refs, file paths).
    parts = re.split(r"(\{[a-z_]+\+?\})", template)
    regex = ""
    for part in parts:
        if part.startswith("{"):
            name = part.strip("{}+")
            regex += f"(?P<{name}>.+)" if part.endswith("+}") else f"(?P<{name}>[^/]+)"
        else:
            regex += re.escape(part)
    return re.compile(f"^{regex}$")


@functools.cache
def _literal_length(template: str) -> int:
    return len(re.sub(r"\{[^}]*\}", "", template))


def _literal_order(route: Route) -> int:
    return -_literal_length(route.template)


class Router:
    def __init__(self) -> None:
        self.routes: list[Route] = []

    def add(
        self,
        method: str,
        template: str,
        operation_id: str,
        handler: Handler,
        auth: AuthKind = "token",
    ) -> None:
        route = Route(method, template, operation_id, handler, auth, _compile(template))
        # Literal segments beat parameters: longer literal text is tried first, and routes
        # of equal length in the order they were added.
        bisect.insort(self.routes, route, key=_literal_order)

    def find(self, method: str, raw_path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            if route.method != method:
                continue
            match = route.pattern.match(raw_path)
            if match:
                return route, {k: unquote(v) for k, v in match.groupdict().items()}
        return None


def per_page(call: Call) -> tuple[int, int]:
    """``(page, per_page)`` from the query, clamped the way GitHub clamps them."""
    try:
        size = int(call.arg("per_page") or DEFAULT_PER_PAGE)
        page = int(call.arg("page") or 1)
    except ValueError as exc:
        raise ApiError(422, "Invalid pagination parameter") from exc
    return max(page, 1), min(max(size, 1), MAX_PER_PAGE)


def link_header(url: str, query: Mapping[str, str | list[str]], page: int, last: int) -> str:
    """GitHub's ``Link`` header (next/last/first/prev) for a page of a list."""

    def at(number: int) -> str:
        params = {k: (v[-1] if isinstance(v, list) else v) for k, v in query.items()}
        params["page"] = str(number)
        return f"<{url}?{urlencode(params)}>"

    links = []
    if page < last:
        links += [f'{at(page + 1)}; rel="next"', f'{at(last)}; rel="last"']
    if page > 1:
        links += [f'{at(1)}; rel="first"', f'{at(page - 1)}; rel="prev"']
    return ", ".join(links)


def paginate(call: Call, items: Sequence[T], url: str) -> tuple[list[T], dict[str, str]]:
    page, size = per_page(call)
    last = max((len(items) + size - 1) // size, 1)
    chunk = list(items[(page - 1) * size : page * size])
    link = link_header(url, call.query, page, last)
    return chunk, ({"Link": link} if link else {})
