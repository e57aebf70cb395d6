"""Signed webhook deliveries from the GitHub stand-in, in order, through one queue task."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp

from sandbox.webhook_queue import OrderedWebhooks

if TYPE_CHECKING:
    from sandbox.contract import Contract

log = logging.getLogger(__name__)

USER_AGENT = "GitHub-Hookshot/sandbox"
DELIVERY_FAILED = "webhook delivery of %s %s failed: %s"
STATUS_UNREACHABLE = 0  # recorded when the receiver could not be reached at all


class WebhookViolation(Exception):
    """A payload the stand-in built does not match GitHub's webhook schema."""


@dataclass(frozen=True)
class RecordedDelivery:
    event: str
    delivery_id: str
    status: int
    action: str | None
    repo: str | None  # repository.full_name, when the payload names one
    payload: Mapping[str, Any]  # kept so a test can redeliver it unchanged


def sign(secret: str, body: bytes) -> dict[str, str]:
    """Both signature headers GitHub sends (the SHA-1 one is legacy but still present)."""
    key = secret.encode()
    return {
        "X-Hub-Signature-256": "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest(),
        "X-Hub-Signature": "sha1=" + hmac.new(key, body, hashlib.sha1).hexdigest(),
    }


class WebhookSender(OrderedWebhooks):
    def __init__(
        self,
        secret: str,
        contract: Contract | None,
        strict: bool,
        violations: list[str],
    ) -> None:
        super().__init__("sandbox-webhooks")
        self.secret = secret
        self.deliveries: list[RecordedDelivery] = []
        self._contract = contract
        self._strict = strict
        self._violations = violations

    def expected_failure(self, exc: Exception) -> bool:
        return isinstance(exc, WebhookViolation)  # already recorded in violations

    def check(self, event: str, payload: Mapping[str, Any]) -> None:
        if self._contract is None:
            return
        problems = self._contract.validate_webhook(event, payload)
        if problems:
            self._violations.extend(f"webhook {event}: {problem}" for problem in problems)
            if self._strict:
                raise WebhookViolation("; ".join(problems))

    async def deliver(
        self, event: str, payload: Mapping[str, Any], *, delivery_id: str | None = None
    ) -> int:
        self.check(event, payload)
        if self.url is None or self._session is None:
            raise RuntimeError("no webhook_url set or the sandbox is not started")
        delivery_id = delivery_id or str(uuid.uuid4())
        body = json.dumps(payload, separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id,
            "X-GitHub-Hook-ID": "1",
            **sign(self.secret, body),
        }
        installation = payload.get("installation")
        if isinstance(installation, Mapping):
            headers["X-GitHub-Hook-Installation-Target-ID"] = str(installation.get("id"))
            headers["X-GitHub-Hook-Installation-Target-Type"] = "integration"
        try:
            async with self._session.post(self.url, data=body, headers=headers) as response:
                await response.read()
                status = response.status
        except (aiohttp.ClientError, OSError) as exc:
            log.warning(DELIVERY_FAILED, event, delivery_id, exc)
            status = STATUS_UNREACHABLE
        action = payload.get("action")
        repository = payload.get("repository")
        full_name = repository.get("full_name") if isinstance(repository, Mapping) else None
        self.deliveries.append(
            RecordedDelivery(
                event,
                delivery_id,
                status,
                action if isinstance(action, str) else None,
                full_name if isinstance(full_name, str) else None,
                payload,
            )
        )
        return status
