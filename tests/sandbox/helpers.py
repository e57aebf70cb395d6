"""Constants and small test doubles shared by the sandbox tests."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import jwt
from github import Auth, Github
from multidict import CIMultiDict

from bot.github.auth import signing_key

APP_ID = "4242"
INSTALLATION_ID = 77
REPO = "acme/widgets"
SECRET = "sandbox-test-secret"
FILES = {"README.md": "hello\n", "cmake/deps.cmake": "GIT_TAG abc\n"}


class FakeClock:
    """Wall-clock time the tests can move forward (token expiry)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@dataclass
class Received:
    """A webhook delivery as the receiver saw it."""

    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


@dataclass
class Receiver:
    url: str
    received: list[Received] = field(default_factory=list)

    def events(self) -> list[tuple[str, str | None]]:
        return [(r.headers["X-GitHub-Event"], r.payload.get("action")) for r in self.received]


def app_jwt(private_pem: str, now: float, *, app_id: str = APP_ID, lifetime: int = 540) -> str:
    claims = {"iat": int(now) - 60, "exp": int(now) + lifetime, "iss": app_id}
    return jwt.encode(claims, signing_key(private_pem), algorithm="RS256")


@dataclass
class Answer:
    status: int
    body: Any
    headers: CIMultiDict[str]


@dataclass
class RawApi:
    """Plain aiohttp calls, for asserting exact statuses and headers."""

    session: aiohttp.ClientSession
    base_url: str
    token: str

    async def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        auth: str | None = None,
    ) -> Answer:
        sent = {"Authorization": auth or f"token {self.token}", **(headers or {})}
        data = None if body is None else json.dumps(body)
        async with self.session.request(
            method, self.base_url + path, data=data, headers=sent
        ) as response:
            text = await response.text()
            return Answer(
                response.status, json.loads(text) if text else None, CIMultiDict(response.headers)
            )


def pygithub(base_url: str, token: str) -> Github:
    """A PyGithub client on the stand-in: no pauses between requests, no retries (a test
    wants the first answer)."""
    return Github(
        base_url=base_url,
        auth=Auth.Token(token),
        seconds_between_requests=0,
        seconds_between_writes=0,
        retry=None,
    )
