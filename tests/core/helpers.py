"""Builders shared by the core tests (one copy, not one per file)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from bot.store.protocol import Delivery

SECRET = b"test-webhook-secret"


def make_delivery(
    delivery_id: str,
    subject: str = "subject",
    *,
    received_at: float = 1000.0,
    event: str = "push",
    payload: dict[str, Any] | None = None,
) -> Delivery:
    return Delivery(
        delivery_id=delivery_id,
        source="github",
        event=event,
        payload=json.dumps(payload or {"id": delivery_id}).encode(),
        subject=subject,
        received_at=received_at,
    )


def sign(body: bytes, secret: bytes = SECRET) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
