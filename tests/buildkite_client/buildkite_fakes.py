"""A tiny scripted Buildkite for the client's unit tests.

Unit-level only: each test scripts the answers of the endpoints it touches.
The faithful Buildkite stand-in lives in bot.sandbox.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from bot.buildkite import BuildkiteClient

TOKEN = "bkua_test_token"
PIPELINE = "/v2/organizations/vllm/pipelines/ci"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MakeClient = Callable[..., BuildkiteClient]


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    query: str  # exactly as sent, still percent-encoded
    headers: dict[str, str]  # lower-cased names


class FakeBuildkite:
    """Dispatches each request to the handler a test routed it to; 404 otherwise."""

    def __init__(self) -> None:
        self.requests: list[SeenRequest] = []
        self.routes: dict[tuple[str, str], Handler] = {}
        self._gates: list[asyncio.Event] = []
        self.app = web.Application()
        self.app.router.add_route("*", "/{path:.*}", self._dispatch)

    def route(self, method: str, path: str, handler: Handler) -> None:
        self.routes[method, path] = handler

    def answer(self, method: str, path: str, *responses: Callable[[], web.StreamResponse]) -> None:
        """Give the responses in turn, repeating the last one."""
        remaining = list(responses)

        async def handler(request: web.Request) -> web.StreamResponse:
            make = remaining.pop(0) if len(remaining) > 1 else remaining[0]
            return make()

        self.route(method, path, handler)

    def hang(self, method: str, path: str) -> None:
        """Make ``path`` never answer (until the test ends)."""
        gate = asyncio.Event()
        self._gates.append(gate)

        async def handler(request: web.Request) -> web.StreamResponse:
            await gate.wait()
            return web.json_response({})

        self.route(method, path, handler)

    def release(self) -> None:
        for gate in self._gates:
            gate.set()

    def seen(self, method: str, path: str) -> list[SeenRequest]:
        return [r for r in self.requests if r.method == method and r.path == path]

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        headers = {key.lower(): value for key, value in request.headers.items()}
        path, _, query = request.raw_path.partition("?")
        self.requests.append(SeenRequest(request.method, path, query, headers))
        handler = self.routes.get((request.method, path))
        if handler is None:
            return web.json_response({"message": "Not Found"}, status=404)
        return await handler(request)


def json_answer(
    data: object, status: int = 200, headers: dict[str, str] | None = None
) -> Callable[[], web.StreamResponse]:
    return lambda: web.json_response(data, status=status, headers=headers)


def raw_answer(
    body: bytes, status: int = 200, headers: dict[str, str] | None = None
) -> Callable[[], web.StreamResponse]:
    return lambda: web.Response(body=body, status=status, headers=headers)
