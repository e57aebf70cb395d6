"""A tiny scripted Buildkite for the client's unit tests.

Unit-level only: each test scripts the answers of the endpoints it touches.
The faithful Buildkite stand-in lives in sandbox.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from bot.buildkite.client import BuildkiteClient

from ..scripted_server import ScriptedServer

TOKEN = "bkua_test_token"
PIPELINE = "/v2/organizations/vllm/pipelines/ci"

MakeClient = Callable[..., BuildkiteClient]


class FakeBuildkite(ScriptedServer):
    """Dispatches each request to the handler a test routed it to; 404 otherwise."""

    def answer(self, method: str, path: str, *responses: Callable[[], web.StreamResponse]) -> None:
        """Give the responses in turn, repeating the last one."""
        remaining = list(responses)

        async def handler(request: web.Request) -> web.StreamResponse:
            make = remaining.pop(0) if len(remaining) > 1 else remaining[0]
            return make()

        self.route(method, path, handler)


def json_answer(
    data: object, status: int = 200, headers: dict[str, str] | None = None
) -> Callable[[], web.StreamResponse]:
    return lambda: web.json_response(data, status=status, headers=headers)


def raw_answer(
    body: bytes, status: int = 200, headers: dict[str, str] | None = None
) -> Callable[[], web.StreamResponse]:
    return lambda: web.Response(body=body, status=status, headers=headers)
