"""Buildkite webhook deliveries from the stand-in: signed or token-authenticated, in order."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from sandbox.webhook_queue import OrderedWebhooks

log = logging.getLogger(__name__)

USER_AGENT = "Buildkite-Request"
DELIVERY_FAILED = "buildkite webhook delivery of %s failed: %s"
STATUS_UNREACHABLE = 0  # recorded when the receiver could not be reached at all


@dataclass(frozen=True)
class RecordedDelivery:
    event: str
    request_id: str
    status: int
    headers: Mapping[str, str]
    payload: Mapping[str, Any]


def signature_header(token: str, timestamp: int, body: bytes) -> str:
    """``X-Buildkite-Signature``: HMAC-SHA256 of ``"<timestamp>.<body>"`` keyed by the token."""
    digest = hmac.new(token.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"timestamp={timestamp},signature={digest.hexdigest()}"


class BuildkiteWebhooks(OrderedWebhooks):
    """Deliveries leave in the order the stand-in emitted them."""

    def __init__(self, token: str, signature_mode: bool, clock: Callable[[], float]) -> None:
        super().__init__("sandbox-buildkite-webhooks")
        self.token = token
        self.signature_mode = signature_mode
        self.clock = clock
        self.deliveries: list[RecordedDelivery] = []

    def headers_for(self, event: str, body: bytes) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Buildkite-Event": event,
            "X-Buildkite-Request": str(uuid.uuid4()),
        }
        if self.signature_mode:
            headers["X-Buildkite-Signature"] = signature_header(self.token, int(self.clock()), body)
        else:
            headers["X-Buildkite-Token"] = self.token
        return headers

    async def deliver(self, event: str, payload: Mapping[str, Any]) -> int:
        if self.url is None or self._session is None:
            raise RuntimeError("no webhook_url set or the sandbox is not started")
        body = json.dumps(payload, separators=(",", ":")).encode()
        headers = self.headers_for(event, body)
        try:
            async with self._session.post(self.url, data=body, headers=headers) as response:
                await response.read()
                status = response.status
        except (aiohttp.ClientError, OSError) as exc:
            log.warning(DELIVERY_FAILED, event, exc)
            status = STATUS_UNREACHABLE
        self.deliveries.append(
            RecordedDelivery(event, headers["X-Buildkite-Request"], status, headers, payload)
        )
        return status
