"""Which operation of GitHub's OpenAPI description serves a method and path.

The routes are built once from the description's ``paths``: each operation's
path template becomes a regex over the raw (still percent-encoded) path, its
parameters are resolved (``$ref`` followed), and the routes are tried most
specific first. ``pointer_at`` and ``resolve`` read the description by JSON
pointer, as the validators in ``contract`` do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

# Parameters whose value may contain "/" even when the spec does not mark them
# with x-multi-segment (compare's "{base}...{head}" are branch names, a release's
# "{tag}" a tag name such as "release/v1").
MULTI_SEGMENT_NAMES = frozenset({"ref", "path", "basehead", "base", "head", "branch", "tag"})


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str  # upper-case
    path_template: str  # e.g. "/repos/{owner}/{repo}/git/ref/{ref}"


@dataclass(frozen=True)
class Match:
    operation: Operation
    path_params: dict[str, str]  # URL-decoded


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str  # "path" | "query" | "header" | "cookie"
    required: bool
    schema: Any
    pointer: str  # JSON pointer of ``schema`` inside the subset
    multi_segment: bool  # the value may contain "/"


@dataclass(frozen=True)
class Route:
    operation: Operation
    pattern: re.Pattern[str]
    param_names: tuple[str, ...]
    # Higher sorts first: more literal segments, then fewer multi-segment params,
    # so ".../commits/{ref}/status" beats ".../commits/{ref}" swallowing "x/status".
    specificity: tuple[int, int]
    parameters: tuple[Parameter, ...]
    pointer: str  # JSON pointer of the operation object


def escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def pointer_at(document: Any, pointer: str) -> Any:
    """The node of ``document`` at the JSON ``pointer``."""
    node: Any = document
    for token in pointer.split("/")[1:]:
        key = token.replace("~1", "/").replace("~0", "~")
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def resolve(document: Any, node: Any, pointer: str) -> tuple[Any, str]:
    """Follow local ``$ref``s; returns the target and its own pointer."""
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
        pointer = node["$ref"].removeprefix("#")
        node = pointer_at(document, pointer)
    return node, pointer


def route_pattern(template: str, multi_segment: set[str]) -> tuple[re.Pattern[str], list[str]]:
    """A regex over the *raw* (still percent-encoded) path for ``template``."""
    pieces = re.split(r"\{([^}]+)\}", template)
    names = pieces[1::2]
    regex = ""
    for index, piece in enumerate(pieces):
        if index % 2 == 0:
            regex += re.escape(piece)
            continue
        is_last = index == len(pieces) - 2 and not pieces[-1]
        if piece in multi_segment:
            # The last one takes the rest of the path; an inner one takes as little
            # as it can, so "{base}...{head}" splits at the first "...".
            regex += "(.+)" if is_last else "(.+?)"
        else:
            regex += "([^/]+)"
    return re.compile(regex), names


def _parameter(document: Any, raw: Mapping[str, Any], pointer: str) -> Parameter:
    node, pointer = resolve(document, raw, pointer)
    return Parameter(
        name=node["name"],
        location=node["in"],
        required=bool(node.get("required", False)),
        schema=node.get("schema", {}),
        pointer=f"{pointer}/schema",
        multi_segment=bool(node.get("x-multi-segment")) or node["name"] in MULTI_SEGMENT_NAMES,
    )


def build_routes(document: Mapping[str, Any]) -> list[Route]:
    """A route per operation of ``document``, in the description's order."""
    routes: list[Route] = []
    for template, item in document["paths"].items():
        for method, operation in item.items():
            pointer = f"/paths/{escape_pointer(template)}/{method}"
            parameters = tuple(
                _parameter(document, raw, f"{pointer}/parameters/{index}")
                for index, raw in enumerate(operation.get("parameters", []))
            )
            multi = {p.name for p in parameters if p.location == "path" and p.multi_segment}
            pattern, names = route_pattern(template, multi)
            literal_segments = sum(1 for s in template.split("/") if s and "{" not in s)
            routes.append(
                Route(
                    operation=Operation(operation["operationId"], method.upper(), template),
                    pattern=pattern,
                    param_names=tuple(names),
                    specificity=(literal_segments, -len(multi & set(names))),
                    parameters=parameters,
                    pointer=pointer,
                )
            )
    return routes


class Routes:
    """The operations of a description, most specific route first."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        in_spec_order = build_routes(document)
        self.operations = [route.operation for route in in_spec_order]
        self._by_operation = {route.operation: route for route in in_spec_order}
        self._routes = sorted(in_spec_order, key=lambda route: route.specificity, reverse=True)

    def find(self, path: str, method: str) -> tuple[Route | None, dict[str, str]]:
        """The route serving ``method path`` and its URL-decoded path parameters."""
        raw = path.partition("?")[0]
        for route in self._routes:
            if route.operation.method != method:
                continue
            found = route.pattern.fullmatch(raw)
            if found:
                values = (unquote(group) for group in found.groups())
                return route, dict(zip(route.param_names, values, strict=True))
        return None, {}

    def allowed_methods(self, path: str) -> list[str]:
        raw = path.partition("?")[0]
        return sorted({r.operation.method for r in self._routes if r.pattern.fullmatch(raw)})

    def of(self, match: Match) -> Route:
        route = self._by_operation.get(match.operation)
        if route is None:
            raise ValueError(f"{match.operation} is not an operation of this contract")
        return route
