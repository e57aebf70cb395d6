"""Webhook intake (GitHub and Buildkite): verify, store durably, answer 202.

Longer than 400 lines because both senders share every step (size cap, body read,
durable enqueue, the answer) and differ only in how they sign; one module keeps the
shared path in one place.

Nothing is processed here. The GitHub handler checks the headers and the
signature itself (gidgethub's ``Event.from_http`` accepts SHA-1-only
signatures and, with no secret, unsigned bodies), hands the raw body to the
inbox, and only answers once the delivery is committed, well inside GitHub's
10 s. Duplicates (a redelivery keeps its ``X-GitHub-Delivery``) are answered
202 too, since GitHub treats anything else as a failed delivery; a redelivery
of one that FAILED is queued to run again instead (202 "requeued"), which is
how a lost command or approval is recovered with GitHub's "Redeliver".

A GitHub webhook may be configured to send ``application/x-www-form-urlencoded``
instead of JSON: the body is then ``payload=<the JSON, URL-encoded>`` and the
signature covers that raw body. It is verified as sent, and the JSON of its one
``payload`` field is what gets stored, so everything downstream sees JSON.

A sender that hangs up before its body is complete gets nothing stored and
costs one INFO line: that is the sender's problem, not a fault of the bot.

The Buildkite handler shares those steps; it checks ``X-Buildkite-Signature``
(an HMAC over the timestamp and the body, refused once stale) or the plain
``X-Buildkite-Token``, whichever the app configured.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import json
import logging
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import aiohttp
from aiohttp import hdrs, web

from bot.core.sources import Source, routed_event
from bot.service.inbox import Inbox
from bot.store.protocol import Delivery, EnqueueResult

logger = logging.getLogger(__name__)

T = TypeVar("T")
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
STATUS_REQUEUED = "requeued"
MISSING_HEADERS = "missing X-GitHub-Event or X-GitHub-Delivery header"
TOO_LARGE = "payload too large"
BAD_SIGNATURE = "missing or invalid X-Hub-Signature-256"
NOT_A_JSON_OBJECT = "body is not a JSON object (configure the webhook with application/json)"
NOT_STORED = "the delivery could not be stored; try again"
JSON_CONTENT_TYPE = "application/json"
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
FORM_FIELD = "payload"
UNSUPPORTED_CONTENT_TYPE = (
    "unsupported Content-Type: configure the webhook with application/json"
    " or application/x-www-form-urlencoded"
)
BAD_FORM = "a form-encoded body must have exactly one payload field, holding a JSON object"
BODY_INCOMPLETE = "the body was cut off or malformed in transit"

BUILDKITE_EVENT_HEADER = "X-Buildkite-Event"
BUILDKITE_SIGNATURE_HEADER = "X-Buildkite-Signature"
BUILDKITE_TOKEN_HEADER = "X-Buildkite-Token"
# Each delivery's id, as Buildkite sends it (the chaos test found it misnamed here, which
# had every Buildkite delivery keyed by its body's hash). Without one, the body's hash is
# the dedupe key, so a resend of the same payload is a duplicate.
BUILDKITE_REQUEST_ID_HEADER = "X-Buildkite-Request"
BUILDKITE_BODY_ID_PREFIX = "bk:"
BUILDKITE_SIGNATURE_MAX_AGE = 300.0

MISSING_BUILDKITE_EVENT = "missing X-Buildkite-Event header"
NOT_AN_EVENT_OF = "{event!r} is not an event name {source} sends"
BAD_BUILDKITE_SIGNATURE = "missing, invalid or stale X-Buildkite-Signature"
BAD_BUILDKITE_TOKEN = "missing or invalid X-Buildkite-Token"
ONE_BUILDKITE_CREDENTIAL = "configure exactly one of a Buildkite signature secret or token"

LOG_ACCEPTED = "accepted %s delivery %s (subject %s)"
LOG_REJECTED = "rejected delivery %s: %s"
LOG_SUBJECT_FAILED = "no subject for %s delivery %s; using its own id"
LOG_STORE_FAILED = "could not store delivery %s"
LOG_BODY_BROKEN = "dropped delivery %s: its body was cut off or malformed in transit (%s)"


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


_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_HEX_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def _buildkite_signature_parts(header: str) -> tuple[str, str] | None:
    """(timestamp, hex signature) from ``timestamp=<unix>,signature=<hex>``; None if malformed."""
    fields: dict[str, str] = {}
    for part in header.split(","):
        key, equals, value = part.partition("=")
        key = key.strip().lower()
        if not equals or key in fields:
            return None  # a repeated field could smuggle a second signature
        fields[key] = value.strip()
    timestamp, signature = fields.get("timestamp"), fields.get("signature")
    if timestamp is None or signature is None:
        return None
    if not _TIMESTAMP.fullmatch(timestamp) or not _HEX_SHA256.fullmatch(signature):
        return None
    return timestamp, signature.lower()


def verify_buildkite_signature(
    secret: bytes,
    body: bytes,
    header: str | None,
    *,
    now: float,
    max_age: float = BUILDKITE_SIGNATURE_MAX_AGE,
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` and is at most ``max_age`` old.

    Buildkite signs ``"<timestamp>.<body>"``, so a captured delivery cannot
    be replayed once its timestamp is stale. Timestamps too far in the future
    are refused as well: they would stay fresh for longer than ``max_age``.
    """
    if not secret or not header:
        return False
    parts = _buildkite_signature_parts(header)
    if parts is None:
        return False
    timestamp, given = parts
    if abs(now - int(timestamp)) > max_age:
        return False
    signed = timestamp.encode() + b"." + body
    expected = hmac.new(secret, signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, given)


def verify_buildkite_token(expected: bytes, header: str | None) -> bool:
    """Whether ``header`` (``X-Buildkite-Token``) is ``expected``; an empty token trusts nothing."""
    if not expected or not header:
        return False
    return hmac.compare_digest(expected, header.strip().encode())


def buildkite_delivery_id(request_id: str | None, body: bytes) -> str:
    """The dedupe key of a Buildkite delivery: its request id, else its body's hash."""
    if request_id and request_id.strip():
        return request_id.strip()
    return BUILDKITE_BODY_ID_PREFIX + hashlib.sha256(body).hexdigest()


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _refuse_event(shown_id: str, source: Source, event: str) -> web.Response:
    message = NOT_AN_EVENT_OF.format(event=event, source=source.value)
    logger.info(LOG_REJECTED, shown_id, message)
    return _error(400, message)


# What a sender's broken body looks like while it is read: the connection was lost
# (aiohttp fails the read with ConnectionResetError), or the framing was invalid.
_BROKEN_BODY = (ConnectionError, aiohttp.ClientPayloadError, web.RequestPayloadError)


async def _read_capped(request: web.Request, limit: int, delivery_id: str) -> bytes | web.Response:
    """The body, or the refusal to answer with: 413 as soon as it exceeds ``limit``
    (never buffering more), 400 when it breaks off before its end.

    A broken body is the sender's doing (it hung up, or sent bad framing): it is
    logged as one INFO line, without a traceback, and nothing is stored. Should the
    read be cancelled instead, the line is logged and the cancellation goes on.
    """
    declared = request.content_length
    if declared is not None and declared > limit:
        logger.info(LOG_REJECTED, delivery_id, TOO_LARGE)
        return _error(413, TOO_LARGE)
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = await request.content.read(min(_CHUNK, limit + 1 - size))
        except asyncio.CancelledError:
            logger.info(LOG_BODY_BROKEN, delivery_id, "cancelled")
            raise
        except _BROKEN_BODY as exc:
            logger.info(LOG_BODY_BROKEN, delivery_id, type(exc).__name__)
            return _error(400, BODY_INCOMPLETE)  # the sender is most likely gone already
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            logger.info(LOG_REJECTED, delivery_id, TOO_LARGE)
            return _error(413, TOO_LARGE)
        chunks.append(chunk)


_BAD_SIGNATURE = object()
_BAD_FORM = object()


def _parsed(body: bytes) -> object:
    """The JSON value of ``body``, or ``None`` when it is not JSON."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON at all; a JSON `null` is rejected the same way


def _checked(verify: Callable[[bytes], bool], body: bytes) -> object:
    """The parsed body; ``_BAD_SIGNATURE``; or ``None`` when the body is not JSON."""
    if not verify(body):
        return _BAD_SIGNATURE
    return _parsed(body)


def form_payload(body: bytes) -> bytes | None:
    """The value of the one ``payload`` field of a form-encoded body, as UTF-8 bytes;
    None when the body is not a form or has no such field, or more than one."""
    try:
        fields = urllib.parse.parse_qsl(body.decode(), keep_blank_values=True, errors="strict")
    except ValueError:  # not UTF-8, or a percent-escape that does not decode to UTF-8
        return None
    values = [value for name, value in fields if name == FORM_FIELD]
    return values[0].encode() if len(values) == 1 else None


def _checked_github(
    verify: Callable[[bytes], bool], form: bool, body: bytes
) -> tuple[object, bytes]:
    """(parsed payload or a rejection marker, the JSON bytes to store).

    The signature is checked over ``body`` as sent: for a form, that is the
    form-encoded bytes, never the JSON inside them.
    """
    if not verify(body):
        return _BAD_SIGNATURE, body
    if not form:
        return _parsed(body), body
    inner = form_payload(body)
    if inner is None:
        return _BAD_FORM, body
    parsed = _parsed(inner)
    return (parsed if isinstance(parsed, dict) else _BAD_FORM), inner


def _is_form(request: web.Request) -> bool | None:
    """Whether the GitHub body is form-encoded (False: JSON); None for a content type the
    intake does not take. No Content-Type at all is taken as JSON, as it always was."""
    if not request.headers.get(hdrs.CONTENT_TYPE, "").strip():
        return False
    media = request.content_type.strip().lower()  # charset and other parameters dropped
    if media == JSON_CONTENT_TYPE:
        return False
    if media == FORM_CONTENT_TYPE:
        return True
    return None


async def _off_loop_if_large(body: bytes, work: Callable[[bytes], T]) -> T:
    """``work(body)``, in a thread when the body is large enough to stall the loop."""
    if len(body) > INLINE_BODY_LIMIT:
        return await asyncio.to_thread(work, body)
    return work(body)


async def _accept(
    inbox: Inbox,
    source: str,
    event: str,
    delivery_id: str,
    body: bytes,
    payload: object,
    subject_of: SubjectFn,
    clock: Callable[[], float],
) -> web.Response:
    """A verified body: refuse it unless it is a JSON object, else store it (202)."""
    if not isinstance(payload, dict):
        logger.info(LOG_REJECTED, delivery_id, NOT_A_JSON_OBJECT)
        return _error(400, NOT_A_JSON_OBJECT)
    delivery = Delivery(
        delivery_id=delivery_id,
        source=source,
        event=event,
        payload=body,
        subject=_subject(subject_of, event, delivery_id, payload),
        received_at=clock(),
        wanted=inbox.wants(source, event, payload),
        parsed=payload,
    )
    return await _store(inbox, delivery)


_ANSWERS = {
    EnqueueResult.NEW: STATUS_ACCEPTED,
    EnqueueResult.REQUEUED: STATUS_REQUEUED,
    EnqueueResult.DUPLICATE: STATUS_DUPLICATE,
}
# Every 202's body, encoded once: the answer is the same for every delivery.
_ANSWER_BODIES = {
    result: json.dumps({"status": status}).encode() for result, status in _ANSWERS.items()
}


def _answer(result: EnqueueResult) -> web.Response:
    return web.Response(body=_ANSWER_BODIES[result], status=202, content_type=JSON_CONTENT_TYPE)


async def _store(inbox: Inbox, delivery: Delivery) -> web.Response:
    """Admit the delivery and give the sender its answer: 202 (accepted, requeued or
    duplicate) or 503."""
    try:
        result = await inbox.admit(delivery)
    except Exception:
        # Answering 202 here would lose the delivery; a 503 makes it show as
        # failed in the sender's delivery log, where it can be redelivered. An
        # outage is already the store's one line: no traceback per request then.
        if inbox.outage.down:
            logger.warning(LOG_STORE_FAILED, delivery.delivery_id)
        else:
            logger.exception(LOG_STORE_FAILED, delivery.delivery_id)
        return _error(503, NOT_STORED)
    if result is EnqueueResult.NEW:
        # The delivery's one INFO line at intake. Its id and event are fields of the record
        # as well (keys in JSON), beside the repository the log context carries.
        logger.info(
            LOG_ACCEPTED,
            delivery.event,
            delivery.delivery_id,
            delivery.subject,
            extra={"delivery_id": delivery.delivery_id, "event": delivery.event},
        )
    return _answer(result)


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
        if routed_event(Source.GITHUB, event) is None:
            # Above all the bot's internal events: nobody outside may name them.
            return _refuse_event(delivery_id, Source.GITHUB, event)
        form = _is_form(request)
        if form is None:
            logger.info(LOG_REJECTED, delivery_id, UNSUPPORTED_CONTENT_TYPE)
            return _error(415, UNSUPPORTED_CONTENT_TYPE)
        body = await _read_capped(request, max_body, delivery_id)
        if isinstance(body, web.Response):
            return body
        signature = request.headers.get(SIGNATURE_HEADER)

        def verify(signed: bytes) -> bool:
            return verify_github_signature(secret, signed, signature)

        payload, stored = await _off_loop_if_large(
            body, functools.partial(_checked_github, verify, form)
        )
        if payload is _BAD_SIGNATURE:
            logger.info(LOG_REJECTED, delivery_id, BAD_SIGNATURE)
            return _error(401, BAD_SIGNATURE)
        if payload is _BAD_FORM:
            logger.info(LOG_REJECTED, delivery_id, BAD_FORM)
            return _error(400, BAD_FORM)
        return await _accept(
            inbox, "github", event, delivery_id, stored, payload, subject_of, clock
        )

    return handle


Verifier = Callable[[web.Request], Callable[[bytes], bool]]


def _signature_verifier(secret: bytes, clock: Callable[[], float], max_age: float) -> Verifier:
    def verifier(request: web.Request) -> Callable[[bytes], bool]:
        header = request.headers.get(BUILDKITE_SIGNATURE_HEADER)
        now = clock()  # when the delivery arrived, not when a thread got to it
        return lambda body: verify_buildkite_signature(
            secret, body, header, now=now, max_age=max_age
        )

    return verifier


def _token_verifier(token: bytes) -> Verifier:
    def verifier(request: web.Request) -> Callable[[bytes], bool]:
        given = request.headers.get(BUILDKITE_TOKEN_HEADER)
        return lambda body: verify_buildkite_token(token, given)

    return verifier


def buildkite_webhook_handler(
    *,
    signature_secret: bytes | None,
    token: bytes | None,
    inbox: Inbox,
    subject_of: SubjectFn,
    clock: Callable[[], float] = time.time,
    max_body: int = MAX_BODY,
    max_age: float = BUILDKITE_SIGNATURE_MAX_AGE,
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The ``POST /webhooks/buildkite`` handler, checking a signature or a plain token.

    Exactly one of ``signature_secret`` and ``token`` must be given (and not
    empty): a handler that checks neither would accept anyone's deliveries.
    """
    if signature_secret and token is None:
        verifier = _signature_verifier(signature_secret, clock, max_age)
        rejection = BAD_BUILDKITE_SIGNATURE
    elif token and signature_secret is None:
        verifier = _token_verifier(token)
        rejection = BAD_BUILDKITE_TOKEN
    else:
        raise ValueError(ONE_BUILDKITE_CREDENTIAL)

    async def handle(request: web.Request) -> web.StreamResponse:
        event = request.headers.get(BUILDKITE_EVENT_HEADER, "").strip()
        request_id = request.headers.get(BUILDKITE_REQUEST_ID_HEADER)
        shown_id = (request_id or "").strip() or "?"
        if not event:
            logger.info(LOG_REJECTED, shown_id, MISSING_BUILDKITE_EVENT)
            return _error(400, MISSING_BUILDKITE_EVENT)
        if routed_event(Source.BUILDKITE, event) is None:
            return _refuse_event(shown_id, Source.BUILDKITE, event)
        body = await _read_capped(request, max_body, shown_id)
        if isinstance(body, web.Response):
            return body
        verify = verifier(request)

        def check(raw: bytes) -> tuple[object, str]:
            # Hashing a large body is as costly as parsing it: both run off the loop.
            return _checked(verify, raw), buildkite_delivery_id(request_id, raw)

        payload, delivery_id = await _off_loop_if_large(body, check)
        if payload is _BAD_SIGNATURE:
            logger.info(LOG_REJECTED, shown_id, rejection)
            return _error(401, rejection)
        return await _accept(
            inbox, "buildkite", event, delivery_id, body, payload, subject_of, clock
        )

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
