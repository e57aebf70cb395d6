"""A tiny stand-in for the few GitHub endpoints the client's token and retry logic touches.

Unit-level only: the faithful, OpenAPI-validated GitHub stand-in lives in
sandbox. Here each test scripts the answers of the endpoints it needs.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jwt
from aiohttp import web

from bot.github.client import GitHubApp

from ..scripted_server import Handler, ScriptedServer

APP_ID = "4242"

MakeApp = Callable[..., GitHubApp]


class FakeClock:
    """Epoch seconds that only move when a test (or a recorded sleep) says so."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RecordingSleep:
    """Records each requested delay and advances the clock instead of waiting."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        self.clock.advance(seconds)
        await asyncio.sleep(0)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    json: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def response(self) -> web.Response:
        if self.json is None:
            return web.Response(status=self.status, headers=dict(self.headers))
        return web.json_response(self.json, status=self.status, headers=dict(self.headers))


def answers(*scripted: Answer) -> Handler:
    """A handler giving the scripted answers in turn, repeating the last one."""
    remaining = list(scripted)

    async def handler(request: web.Request) -> web.StreamResponse:
        answer = remaining.pop(0) if len(remaining) > 1 else remaining[0]
        return answer.response()

    return handler


class FakeGitHub(ScriptedServer):
    """Mints installation tokens, answers installation lookups, dispatches scripted routes."""

    def __init__(self, clock: FakeClock, public_key: str) -> None:
        super().__init__()
        self.clock = clock
        self.public_key = public_key
        self.installations: dict[str, int] = {}
        self.valid_tokens: set[str] = set()
        self.token_lifetime = 3600.0
        self.token_failures = 0  # answer 500 to this many token requests first
        self._serial = itertools.count(1)

    def token_posts(self, installation_id: int) -> int:
        return len(self.seen("POST", f"/app/installations/{installation_id}/access_tokens"))

    def path_of(self, request: web.Request) -> str:
        return request.path  # decoded: GitHub routes are scripted by their plain paths

    async def handle(
        self, request: web.Request, path: str, headers: dict[str, str]
    ) -> web.StreamResponse:
        auth = headers.get("authorization", "")
        if path.startswith("/app/") or path.endswith("/installation"):
            if not self._valid_app_jwt(auth):
                return web.json_response(
                    {"message": "A JSON web token could not be decoded"}, status=401
                )
            return await self._app_endpoint(request)
        if (request.method, path) in self.routes and (
            auth.removeprefix("token ") not in self.valid_tokens
        ):
            return web.json_response({"message": "Bad credentials"}, status=401)
        return await super().handle(request, path, headers)

    def _valid_app_jwt(self, auth: str) -> bool:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer":
            return False
        try:
            # Checked against the fake clock below, not the machine's.
            claims = jwt.decode(
                token,
                self.public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False},
            )
        except jwt.InvalidTokenError:
            return False
        now = self.clock()
        return bool(claims["iss"] == APP_ID and claims["iat"] <= now < claims["exp"])

    async def _app_endpoint(self, request: web.Request) -> web.StreamResponse:
        parts = request.path.strip("/").split("/")
        if request.method == "POST" and parts[:2] == ["app", "installations"]:
            if self.token_failures > 0:
                self.token_failures -= 1
                return web.json_response({"message": "Server Error"}, status=500)
            token = f"ghs_{parts[2]}_{next(self._serial)}"
            self.valid_tokens.add(token)
            expires = datetime.datetime.fromtimestamp(
                self.clock() + self.token_lifetime, datetime.UTC
            )
            body = {"token": token, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}
            return web.json_response(body, status=201)
        if request.method == "GET" and parts[0] == "repos" and len(parts) == 4:
            installation_id = self.installations.get(f"{parts[1]}/{parts[2]}")
            if installation_id is None:
                return web.json_response({"message": "Not Found"}, status=404)
            return web.json_response({"id": installation_id})
        return web.json_response({"message": "Not Found"}, status=404)
