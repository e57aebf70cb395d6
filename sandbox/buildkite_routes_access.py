"""``GET /v2/access-token`` of the Buildkite stand-in: the calling token and its REST scopes.

Buildkite answers with the token's uuid, its scopes, description, creation time and
its user; tests give a token fewer scopes with ``set_token_scopes``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from aiohttp import web

from sandbox.buildkite_http import json_response
from sandbox.buildkite_json import SANDBOX_USER, iso
from sandbox.buildkite_routes_builds import add

if TYPE_CHECKING:
    from sandbox.buildkite_server import BuildkiteSandbox

ACCESS_TOKEN = "/v2/access-token"
# What a token has unless a test says otherwise: every REST scope the bot's features use
# and the read scopes people usually tick beside them.
DEFAULT_SCOPES = (
    "read_artifacts",
    "read_builds",
    "read_build_logs",
    "read_pipelines",
    "write_builds",
)
TOKEN_DESCRIPTION = "followup-bot (sandbox)"


class AccessTokenRoutes:
    def __init__(self, sandbox: BuildkiteSandbox) -> None:
        self.sb = sandbox
        self.scopes: dict[str, tuple[str, ...]] = {}
        self._created_at = sandbox.clock()

    def get(self, request: web.Request) -> web.Response:
        # The middleware has checked the token already; only its identity is read here.
        token = request.headers["Authorization"].partition(" ")[2].strip()
        return json_response(
            {
                # Stable per token, as a real token's uuid is.
                "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, token)),
                "scopes": list(self.scopes.get(token, DEFAULT_SCOPES)),
                "description": TOKEN_DESCRIPTION,
                "created_at": iso(self._created_at),
                "user": {"name": SANDBOX_USER["name"], "email": SANDBOX_USER["email"]},
            },
            200,
        )


def register(router: web.UrlDispatcher, routes: AccessTokenRoutes) -> None:
    async def get(request: web.Request) -> web.StreamResponse:
        return routes.get(request)

    add(router, "GET", ACCESS_TOKEN, get, "access_token.get")
