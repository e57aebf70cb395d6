"""Buildkite webhook deliveries from the stand-in: signed or token-authenticated, in order.

Written apart from the GitHub sender (whose headers, signature and contract
check are GitHub's); the queue-and-worker shape is the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

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


class BuildkiteWebhooks:
    """One queue, one worker: deliveries leave in the order the stand-in emitted them."""

    def __init__(self, token: str, signature_mode: bool, clock: Callable[[], float]) -> None:
        self.token = token
        self.signature_mode = signature_mode
        self.clock = clock
        self.url: str | None = None
        self.deliveries: list[RecordedDelivery] = []
        self._session: aiohttp.ClientSession | None = None
        self._queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._session = aiohttp.ClientSession()
        self._worker = asyncio.create_task(self._drain(), name="sandbox-buildkite-webhooks")

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def enqueue(self, event: str, payload: dict[str, Any]) -> None:
        """Queue an event; dropped when no webhook is configured (as Buildkite would)."""
        if self.url is not None:
            self._queue.put_nowait((event, payload))

    async def flush(self) -> None:
        await self._queue.join()

    async def _drain(self) -> None:
        while True:
            event, payload = await self._queue.get()
            try:
                await self.deliver(event, payload)
            except Exception:  # the worker must survive one bad delivery
                log.exception("sandbox buildkite webhook worker failed on %s", event)
            finally:
                self._queue.task_done()

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
