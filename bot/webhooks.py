"""Webhook intake: verify, store durably, answer 202.

Nothing is processed here. The handler checks the headers and the signature
itself (gidgethub's ``Event.from_http`` accepts SHA-1-only signatures and,
with no secret, unsigned bodies), hands the raw body to the inbox, and only
answers once the delivery is committed, well inside GitHub's 10 s.
Duplicates (a redelivery keeps its ``X-GitHub-Delivery``) are answered 202
too, since GitHub treats anything else as a failed delivery.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from bot.inbox import Inbox
from bot.store import Delivery

logger = logging.getLogger(__name__)

SubjectFn = Callable[[str, Mapping[str, Any]], str]

MAX_BODY = 25 * 1024 * 1024
# Bodies above this are verified and parsed in a thread: hashing and parsing
# megabytes of JSON would otherwise stall every other request.
INLINE_BODY_LIMIT = 256 * 1024
_CHUNK = 64 * 1024

EVENT_HEADER = "X-GitHub-Event"
DELIVERY_HEADER = "X-GitHub-Delivery"
SIGNATURE_HEADER = "X-Hub-Signature-256"
SIGNATURE_PREFIX = "sha256="

STATUS_ACCEPTED = "accepted"
STATUS_DUPLICATE = "duplicate"
MISSING_HEADERS = "missing X-GitHub-Event or X-GitHub-Delivery header"
TOO_LARGE = "payload too large"
BAD_SIGNATURE = "missing or invalid X-Hub-Signature-256"
NOT_A_JSON_OBJECT = "body is not a JSON object (configure the webhook with application/json)"
NOT_STORED = "the delivery could not be stored; try again"

LOG_ACCEPTED = "accepted %s delivery %s (subject %s)"
LOG_REJECTED = "rejected delivery %s: %s"
LOG_SUBJECT_FAILED = "no subject for %s delivery %s; using its own id"
LOG_STORE_FAILED = "could not store delivery %s"


def verify_github_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is ``sha256=<hex HMAC-SHA256(secret, body)>``.

    An empty secret verifies nothing: a bot configured without one must not
    accept every body.
    """
    if not secret or not header or not header.startswith(SIGNATURE_PREFIX):
        return False
    given = header[len(SIGNATURE_PREFIX) :].strip().lower()
    if not given.isascii():
        return False  # compare_digest refuses non-ASCII str; such a header is forged anyway
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, given)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _read_capped(request: web.Request, limit: int) -> bytes | None:
    """The body, or ``None`` as soon as it exceeds ``limit`` (never buffering more)."""
    declared = request.content_length
    if declared is not None and declared > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)


_BAD_SIGNATURE = object()


def _checked(secret: bytes, body: bytes, signature: str | None) -> object:
    """The parsed body; ``_BAD_SIGNATURE``; or ``None`` when the body is not JSON."""
    if not verify_github_signature(secret, body, signature):
        return _BAD_SIGNATURE
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON at all; a JSON `null` is rejected the same way


def github_webhook_handler(
    secret: bytes,
    inbox: Inbox,
    subject_of: SubjectFn,
    clock: Callable[[], float] = time.time,
    *,
    max_body: int = MAX_BODY,
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The ``POST /webhooks/github`` handler; ``max_body`` is lowered only by tests."""

    async def handle(request: web.Request) -> web.StreamResponse:
        event = request.headers.get(EVENT_HEADER, "").strip()
        delivery_id = request.headers.get(DELIVERY_HEADER, "").strip()
        if not event or not delivery_id:
            logger.info(LOG_REJECTED, delivery_id or "?", MISSING_HEADERS)
            return _error(400, MISSING_HEADERS)
        body = await _read_capped(request, max_body)
        if body is None:
            logger.info(LOG_REJECTED, delivery_id, TOO_LARGE)
            return _error(413, TOO_LARGE)
        signature = request.headers.get(SIGNATURE_HEADER)
        if len(body) > INLINE_BODY_LIMIT:
            payload = await asyncio.to_thread(_checked, secret, body, signature)
        else:
            payload = _checked(secret, body, signature)
        if payload is _BAD_SIGNATURE:
            logger.info(LOG_REJECTED, delivery_id, BAD_SIGNATURE)
            return _error(401, BAD_SIGNATURE)
        if not isinstance(payload, dict):
            logger.info(LOG_REJECTED, delivery_id, NOT_A_JSON_OBJECT)
            return _error(400, NOT_A_JSON_OBJECT)
        subject = _subject(subject_of, event, delivery_id, payload)
        delivery = Delivery(
            delivery_id=delivery_id,
            source="github",
            event=event,
            payload=body,
            subject=subject,
            received_at=clock(),
        )
        try:
            accepted = await inbox.submit(delivery)
        except Exception:
            # Answering 202 here would lose the delivery; a 503 makes it show
            # as failed in GitHub's delivery log, where it can be redelivered.
            logger.exception(LOG_STORE_FAILED, delivery_id)
            return _error(503, NOT_STORED)
        if accepted:
            logger.info(LOG_ACCEPTED, event, delivery_id, subject)
        status = STATUS_ACCEPTED if accepted else STATUS_DUPLICATE
        return web.json_response({"status": status}, status=202)

    return handle


def _subject(
    subject_of: SubjectFn, event: str, delivery_id: str, payload: Mapping[str, Any]
) -> str:
    # A payload the subject function cannot read (an unexpected shape) is still
    # stored, keyed by its own id so it serializes with nothing; the dispatcher
    # decides what to do with it, and the failure is visible in the log.
    try:
        return subject_of(event, payload)
    except Exception:
        logger.warning(LOG_SUBJECT_FAILED, event, delivery_id, exc_info=True)
        return f"delivery:{delivery_id}"


async def healthz(request: web.Request) -> web.Response:
    """Liveness: the process answers HTTP. It says nothing about GitHub."""
    return web.json_response({"status": "ok"})
