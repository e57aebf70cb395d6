"""A tiny aiohttp server whose answers each unit test scripts, route by route.

Shared by the GitHub and Buildkite client tests. Unit-level only: the faithful
stand-ins live in sandbox.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    query: str  # exactly as sent, still percent-encoded
    headers: dict[str, str]  # lower-cased names


class ScriptedServer:
    """Records every request and dispatches it to the handler a test routed it to."""

    def __init__(self) -> None:
        self.requests: list[SeenRequest] = []
        self.routes: dict[tuple[str, str], Handler] = {}
        self._gates: list[asyncio.Event] = []
        self.app = web.Application()
        self.app.router.add_route("*", "/{path:.*}", self._dispatch)

    def route(self, method: str, path: str, handler: Handler) -> None:
        self.routes[method, path] = handler

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

    def path_of(self, request: web.Request) -> str:
        """The path requests are recorded and routed by (raw: as the client encoded it)."""
        return request.raw_path.partition("?")[0]

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        headers = {key.lower(): value for key, value in request.headers.items()}
        path = self.path_of(request)
        self.requests.append(
            SeenRequest(request.method, path, request.raw_path.partition("?")[2], headers)
        )
        return await self.handle(request, path, headers)

    async def handle(
        self, request: web.Request, path: str, headers: dict[str, str]
    ) -> web.StreamResponse:
        """Answer a recorded request; subclasses add what their service does first."""
        handler = self.routes.get((request.method, path))
        if handler is None:
            return web.json_response({"message": "Not Found"}, status=404)
        return await handler(request)
