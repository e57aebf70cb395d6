"""Constants and small test doubles shared by the Buildkite stand-in tests."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from multidict import CIMultiDict

from sandbox.buildkite_state import JobSpec

ORG = "vllm"
PIPELINE = "ci"
API_TOKEN = "bk-api-token"
WEBHOOK_TOKEN = "bk-webhook-token"
SHA_A = "a" * 40
SHA_B = "b" * 40
AUDIT_KEY = "torch-stable-abi-audit"
AUDIT_LABEL = ":nvidia: (L4) Torch Stable ABI Audit"
AUDIT_LOG = (
    b"\x1b_bk;t=1700000000000\x07--- :python: Audit\n"
    b"\x1b_bk;t=1700000000100\x07>>> Auditing vLLM extension modules for PyTorch stable ABI"
    b" compliance\n"
    b"\x1b_bk;t=1700000000200\x07\x1b[31mNot allowed: stale ALLOWED_UNSTABLE_LIBRARIES entries:"
    b" vllm_flash_attn/_vllm_fa3_C.abi3.so\x1b[0m\n"
)


def audit_job(state: str = "failed", exit_status: int | None = 1, **kw: Any) -> JobSpec:
    return JobSpec(AUDIT_KEY, AUDIT_LABEL, state=state, exit_status=exit_status, **kw)


def api_path(rest: str) -> str:
    return f"/organizations/{ORG}/pipelines/{PIPELINE}{rest}"


@dataclass
class Answer:
    status: int
    body: Any
    headers: CIMultiDict[str]
    raw: bytes


@dataclass
class BuildkiteApi:
    """Plain aiohttp calls against the stand-in, for asserting exact statuses and headers."""

    session: aiohttp.ClientSession
    base_url: str
    token: str = API_TOKEN

    async def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Any = None,
        headers: dict[str, str] | None = None,
        token: str | None = None,
        follow: bool = True,
    ) -> Answer:
        sent = {"Authorization": f"Bearer {token or self.token}", **(headers or {})}
        url = path if path.startswith("http") else self.base_url + path
        data = None if body is None else json.dumps(body)
        async with self.session.request(
            method, url, data=data, params=params, headers=sent, allow_redirects=follow
        ) as response:
            raw = await response.read()
            parsed: Any = None
            if response.content_type == "application/json" and raw:
                parsed = json.loads(raw)
            return Answer(response.status, parsed, CIMultiDict(response.headers), raw)


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> str:
        return self.headers["X-Buildkite-Event"]

    @property
    def payload(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


@dataclass
class Receiver:
    """A webhook endpoint that checks the stand-in's authentication like the bot must."""

    url: str
    token: str = WEBHOOK_TOKEN
    received: list[Received] = field(default_factory=list)

    def authentic(self, item: Received) -> bool:
        signature = item.headers.get("X-Buildkite-Signature")
        if signature is None:
            return hmac.compare_digest(item.headers.get("X-Buildkite-Token", ""), self.token)
        parts = dict(part.split("=", 1) for part in signature.split(","))
        expected = hmac.new(
            self.token.encode(), parts["timestamp"].encode() + b"." + item.body, hashlib.sha256
        ).hexdigest()
        return hmac.compare_digest(expected, parts["signature"])

    def events(self) -> list[str]:
        return [item.event for item in self.received]
