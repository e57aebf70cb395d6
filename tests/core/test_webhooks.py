from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from unittest import mock

import aiohttp
import pytest
from aiohttp import web
from aiohttp.streams import StreamReader
from aiohttp.test_utils import TestClient, make_mocked_request

from bot.service.inbox import Inbox
from bot.service.webhooks import (
    BAD_FORM,
    BAD_SIGNATURE,
    BODY_INCOMPLETE,
    LOG_BODY_BROKEN,
    MAX_BODY,
    MISSING_HEADERS,
    NOT_A_JSON_OBJECT,
    NOT_STORED,
    TOO_LARGE,
    UNSUPPORTED_CONTENT_TYPE,
    buildkite_webhook_handler,
    form_payload,
    github_webhook_handler,
    healthz,
    verify_github_signature,
)
from bot.store.protocol import Delivery, DeliveryStatus
from bot.store.sqlite import SQLiteStore

from .helpers import SECRET, sign

Client = TestClient[web.Request, web.Application]
ClientFactory = Callable[[web.Application], Awaitable[Client]]

NOW = 1234.5


def subject_of(event: str, payload: Mapping[str, Any]) -> str:
    return f"{event}:{payload['repository']['full_name']}"


async def nothing(delivery: Delivery) -> None:
    """The inbox is never started here: deliveries stay QUEUED for inspection."""


def make_app(inbox: Inbox, *, max_body: int = MAX_BODY) -> web.Application:
    app = web.Application()
    handler = github_webhook_handler(SECRET, inbox, subject_of, lambda: NOW, max_body=max_body)
    app.router.add_post("/webhooks/github", handler)
    app.router.add_get("/healthz", healthz)
    return app


@pytest.fixture
async def client(store: SQLiteStore, aiohttp_client: ClientFactory) -> Client:
    return await aiohttp_client(make_app(Inbox(store, nothing)))


def body_of(payload: object) -> bytes:
    return json.dumps(payload).encode()


def headers(
    body: bytes, *, event: str = "push", delivery: str = "d-1", signature: str | None = None
) -> dict[str, str]:
    result = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": signature if signature is not None else sign(body),
        "Content-Type": "application/json",
    }
    return result


PUSH = body_of({"ref": "refs/heads/main", "repository": {"full_name": "vllm-project/vllm"}})


def test_signature_verification() -> None:
    body = b'{"a": 1}'
    assert verify_github_signature(SECRET, body, sign(body))
    assert verify_github_signature(SECRET, body, sign(body).upper().replace("SHA256=", "sha256="))
    assert not verify_github_signature(SECRET, body + b" ", sign(body))
    assert not verify_github_signature(b"other", body, sign(body))
    assert not verify_github_signature(SECRET, body, None)
    assert not verify_github_signature(SECRET, body, "")
    assert not verify_github_signature(SECRET, body, "sha1=" + "0" * 40)
    assert not verify_github_signature(SECRET, body, sign(body)[len("sha256=") :])
    assert not verify_github_signature(SECRET, body, "sha256=ünicode")
    assert not verify_github_signature(b"", body, sign(body, b""))  # no secret, no trust


async def test_accepted_delivery_is_stored_before_the_202(
    client: Client, store: SQLiteStore
) -> None:
    response = await client.post("/webhooks/github", data=PUSH, headers=headers(PUSH))
    assert response.status == 202
    assert await response.json() == {"status": "accepted"}
    record = await store.get_delivery("d-1")
    assert record is not None
    assert record.status is DeliveryStatus.QUEUED
    assert record.delivery == Delivery(
        delivery_id="d-1",
        source="github",
        event="push",
        payload=PUSH,
        subject="push:vllm-project/vllm",
        received_at=NOW,
    )


async def test_a_redelivery_is_a_duplicate(client: Client, store: SQLiteStore) -> None:
    first = await client.post("/webhooks/github", data=PUSH, headers=headers(PUSH))
    again = await client.post("/webhooks/github", data=PUSH, headers=headers(PUSH))
    assert (first.status, again.status) == (202, 202)
    assert await again.json() == {"status": "duplicate"}
    assert len(await store.list_deliveries()) == 1


@pytest.mark.parametrize("event", ["ping", "some_future_event"])
async def test_ping_and_unknown_events_are_accepted(
    client: Client, store: SQLiteStore, event: str
) -> None:
    body = body_of({"zen": "Keep it logically awesome.", "repository": {"full_name": "o/r"}})
    response = await client.post("/webhooks/github", data=body, headers=headers(body, event=event))
    assert response.status == 202
    record = await store.get_delivery("d-1")
    assert record is not None
    assert record.delivery.event == event


async def test_unreadable_subject_falls_back_to_the_delivery_id(
    client: Client, store: SQLiteStore
) -> None:
    body = body_of({"zen": "no repository here"})
    response = await client.post("/webhooks/github", data=body, headers=headers(body, delivery="x"))
    assert response.status == 202
    record = await store.get_delivery("x")
    assert record is not None
    assert record.delivery.subject == "delivery:x"


@pytest.mark.parametrize("missing", ["X-GitHub-Event", "X-GitHub-Delivery"])
async def test_missing_headers_are_400(client: Client, store: SQLiteStore, missing: str) -> None:
    sent = headers(PUSH)
    del sent[missing]
    response = await client.post("/webhooks/github", data=PUSH, headers=sent)
    assert response.status == 400
    assert await response.json() == {"error": MISSING_HEADERS}
    assert await store.list_deliveries() == []


@pytest.mark.parametrize(
    "signature",
    [
        "",
        "sha1=" + "0" * 40,
        sign(PUSH, b"wrong secret"),
        sign(PUSH + b"\n"),
    ],
)
async def test_bad_signatures_are_401(client: Client, store: SQLiteStore, signature: str) -> None:
    response = await client.post(
        "/webhooks/github", data=PUSH, headers=headers(PUSH, signature=signature)
    )
    assert response.status == 401
    assert await response.json() == {"error": BAD_SIGNATURE}
    assert await store.list_deliveries() == []


async def test_absent_signature_header_is_401(client: Client) -> None:
    sent = headers(PUSH)
    del sent["X-Hub-Signature-256"]
    response = await client.post("/webhooks/github", data=PUSH, headers=sent)
    assert response.status == 401


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b"null", b"\xff\xfe{", b"[" * 100_000])
async def test_signed_bodies_that_are_not_json_objects_are_400(
    client: Client, store: SQLiteStore, body: bytes
) -> None:
    response = await client.post("/webhooks/github", data=body, headers=headers(body))
    assert response.status == 400
    assert await response.json() == {"error": NOT_A_JSON_OBJECT}
    assert await store.list_deliveries() == []


def padded(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes."""
    skeleton = body_of({"repository": {"full_name": "o/r"}, "pad": ""})
    return body_of({"repository": {"full_name": "o/r"}, "pad": "x" * (size - len(skeleton))})


@pytest.mark.parametrize("chunked", [False, True])
async def test_body_size_limit(
    store: SQLiteStore, aiohttp_client: ClientFactory, chunked: bool
) -> None:
    client = await aiohttp_client(make_app(Inbox(store, nothing), max_body=1000))

    async def post(body: bytes, delivery: str) -> int:
        async def stream() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 100):
                yield body[start : start + 100]

        data: object = stream() if chunked else body
        response = await client.post(
            "/webhooks/github", data=data, headers=headers(body, delivery=delivery)
        )
        if response.status == 413:
            assert await response.json() == {"error": TOO_LARGE}
        return response.status

    assert await post(padded(1000), "fits") == 202
    assert await post(padded(1001), "too-big") == 413
    assert [r.delivery.delivery_id for r in await store.list_deliveries()] == ["fits"]


async def test_the_real_limit_is_25_mb(client: Client) -> None:
    body = padded(MAX_BODY + 1)

    async def stream() -> AsyncIterator[bytes]:
        view = memoryview(body)
        for start in range(0, len(body), 1 << 20):
            yield bytes(view[start : start + (1 << 20)])

    response = await client.post("/webhooks/github", data=stream(), headers=headers(body))
    assert response.status == 413


async def test_a_large_body_is_verified_off_the_loop(client: Client, store: SQLiteStore) -> None:
    body = padded(2 * 1024 * 1024)
    response = await client.post("/webhooks/github", data=body, headers=headers(body))
    assert response.status == 202
    record = await store.get_delivery("d-1")
    assert record is not None
    assert record.delivery.payload == body
    bad = await client.post(
        "/webhooks/github", data=body, headers=headers(body, delivery="d-2", signature=sign(b"x"))
    )
    assert bad.status == 401


async def test_a_store_failure_is_503(store: SQLiteStore, aiohttp_client: ClientFactory) -> None:
    client = await aiohttp_client(make_app(Inbox(store, nothing)))
    await store.close()  # every store call now fails
    response = await client.post("/webhooks/github", data=PUSH, headers=headers(PUSH))
    assert response.status == 503
    assert await response.json() == {"error": NOT_STORED}


async def test_the_secret_and_body_are_never_logged(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    secret_body = body_of({"repository": {"full_name": "o/r"}, "token": "very-private-value"})
    await client.post("/webhooks/github", data=secret_body, headers=headers(secret_body))
    await client.post(
        "/webhooks/github", data=secret_body, headers=headers(secret_body, signature="sha256=00")
    )
    text = caplog.text
    assert "accepted push delivery d-1" in text
    assert SECRET.decode() not in text
    assert "very-private-value" not in text


async def test_healthz(client: Client) -> None:
    response = await client.get("/healthz")
    assert response.status == 200
    assert await response.json() == {"status": "ok"}


# --- form-encoded deliveries --------------------------------------------------------------

FORM = "application/x-www-form-urlencoded"


def form_of(payload_json: bytes | str, **extra: str) -> bytes:
    """A body as GitHub sends it for a form-encoded webhook: ``payload=<the JSON>``."""
    text = payload_json.decode() if isinstance(payload_json, bytes) else payload_json
    return urllib.parse.urlencode({"payload": text, **extra}).encode()


def form_headers(
    body: bytes, *, delivery: str = "d-1", signature: str | None = None
) -> dict[str, str]:
    return {**headers(body, delivery=delivery, signature=signature), "Content-Type": FORM}


async def test_a_form_encoded_delivery_is_stored_as_its_json(
    client: Client, store: SQLiteStore
) -> None:
    inner = json.dumps(
        {"ref": "refs/heads/main", "repository": {"full_name": "o/r"}, "x": "a+b &c"}
    )
    body = form_of(inner)
    assert b"+" in body  # spaces and '&' really are form-encoded
    assert b"%26" in body

    response = await client.post("/webhooks/github", data=body, headers=form_headers(body))

    assert response.status == 202
    assert await response.json() == {"status": "accepted"}
    record = await store.get_delivery("d-1")
    assert record is not None
    assert record.delivery.payload == inner.encode()  # the JSON itself, byte for byte
    assert record.delivery.subject == "push:o/r"


@pytest.mark.parametrize(
    "content_type",
    [
        "application/x-www-form-urlencoded; charset=utf-8",
        "Application/X-WWW-Form-Urlencoded",
    ],
)
async def test_form_content_type_with_parameters_or_capitals(
    client: Client, store: SQLiteStore, content_type: str
) -> None:
    body = form_of(PUSH)
    sent = {**headers(body), "Content-Type": content_type}
    response = await client.post("/webhooks/github", data=body, headers=sent)
    assert response.status == 202
    record = await store.get_delivery("d-1")
    assert record is not None
    assert record.delivery.payload == PUSH


async def test_a_form_is_verified_over_the_form_body_not_the_json(
    client: Client, store: SQLiteStore
) -> None:
    body = form_of(PUSH)
    response = await client.post(
        "/webhooks/github", data=body, headers=form_headers(body, signature=sign(PUSH))
    )
    assert response.status == 401
    assert await response.json() == {"error": BAD_SIGNATURE}
    assert await store.list_deliveries() == []


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"zen=hello",  # no payload field
        form_of(PUSH, zen="x") + b"&" + form_of(PUSH),  # payload twice
        b"payload=" + PUSH + b"&payload=",  # twice, the second empty
        b"payload",  # a field without a value
        b"payload=",
        form_of("not json"),
        form_of("[1, 2]"),
        form_of("null"),
        form_of('"a string"'),
        b"payload=%FF%FE",  # percent-escapes that are not UTF-8
        b"payload=\xff\xfe",  # raw bytes that are not UTF-8
        PUSH,  # JSON sent under the form content type
    ],
)
async def test_bad_forms_are_400(client: Client, store: SQLiteStore, body: bytes) -> None:
    response = await client.post("/webhooks/github", data=body, headers=form_headers(body))
    assert response.status == 400
    assert await response.json() == {"error": BAD_FORM}
    assert await store.list_deliveries() == []


async def test_a_bad_form_with_a_bad_signature_is_401(client: Client) -> None:
    body = b"zen=hello"
    response = await client.post(
        "/webhooks/github", data=body, headers=form_headers(body, signature=sign(b"x"))
    )
    assert response.status == 401  # nothing about the body is said before it is verified


async def test_a_large_form_is_verified_and_parsed_off_the_loop(
    client: Client, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    to_thread = asyncio.to_thread

    async def recording(func: Callable[..., Any], /, *args: Any) -> Any:
        threads.append(len(args[0]))
        return await to_thread(func, *args)

    monkeypatch.setattr(asyncio, "to_thread", recording)
    inner = padded(2 * 1024 * 1024)
    body = form_of(inner)
    response = await client.post("/webhooks/github", data=body, headers=form_headers(body))
    assert response.status == 202
    assert threads == [len(body)]
    record = await store.get_delivery("d-1")
    assert record is not None
    assert record.delivery.payload == inner


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", "application/json;charset=UTF-8", "APPLICATION/JSON"],
)
async def test_json_content_type_with_parameters_or_capitals(
    client: Client, store: SQLiteStore, content_type: str
) -> None:
    sent = {**headers(PUSH), "Content-Type": content_type}
    response = await client.post("/webhooks/github", data=PUSH, headers=sent)
    assert response.status == 202


async def test_no_content_type_is_taken_as_json(client: Client, store: SQLiteStore) -> None:
    sent = headers(PUSH)
    del sent["Content-Type"]
    response = await client.post(
        "/webhooks/github", data=PUSH, headers=sent, skip_auto_headers=["Content-Type"]
    )
    assert response.status == 202
    record = await store.get_delivery("d-1")
    assert record is not None
    assert record.delivery.payload == PUSH


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/octet-stream",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "application/vnd.github+json",
    ],
)
async def test_other_content_types_are_415(
    client: Client, store: SQLiteStore, content_type: str
) -> None:
    sent = {**headers(PUSH), "Content-Type": content_type}
    response = await client.post("/webhooks/github", data=PUSH, headers=sent)
    assert response.status == 415
    assert await response.json() == {"error": UNSUPPORTED_CONTENT_TYPE}
    assert await store.list_deliveries() == []


def test_form_payload() -> None:
    assert form_payload(b"payload=%7B%7D") == b"{}"
    assert form_payload(b"a=1&payload=%7B%22k%22%3A+%22v+w%22%7D&b=2") == b'{"k": "v w"}'
    assert form_payload(b"payload=%C3%A9") == "é".encode()
    assert form_payload(b"a=1") is None
    assert form_payload(b"payload=1&payload=1") is None
    assert form_payload(b"payload=%FF") is None


# --- senders that hang up mid-body ---------------------------------------------------------


@pytest.fixture
async def served(
    store: SQLiteStore, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[str, int]]:
    """Both intakes on a real loopback port: (host, port)."""
    app = make_app(Inbox(store, nothing))
    app.router.add_post(
        "/webhooks/buildkite",
        buildkite_webhook_handler(
            signature_secret=None,
            token=BUILDKITE_TOKEN,
            inbox=Inbox(store, nothing),
            subject_of=subject_of,
            clock=lambda: NOW,
        ),
    )
    runner = web.AppRunner(app, handler_cancellation=getattr(request, "param", False))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield host, port
    finally:
        await runner.cleanup()


BUILDKITE_TOKEN = b"bk-token"


def raw_request(path: str, body: bytes, *, declared: int, extra: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {declared}"]
    lines += [f"{name}: {value}" for name, value in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def intake_headers(path: str, body: bytes) -> dict[str, str]:
    if path == "/webhooks/github":
        return headers(PUSH)
    return {
        "X-Buildkite-Event": "build.finished",
        "X-Buildkite-Token": BUILDKITE_TOKEN.decode(),
        "Content-Type": "application/json",
    }


async def until_logged(caplog: pytest.LogCaptureFixture, message: str) -> None:
    for _ in range(1000):
        if any(r.msg == message for r in caplog.records):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never logged: {message}")


@pytest.mark.parametrize("served", [False, True], indirect=True, ids=["plain", "cancelling"])
@pytest.mark.parametrize("path", ["/webhooks/github", "/webhooks/buildkite"])
async def test_a_sender_hanging_up_mid_body_is_one_quiet_line(
    served: tuple[str, int], store: SQLiteStore, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    caplog.set_level("DEBUG")
    host, port = served
    _, writer = await asyncio.open_connection(host, port)
    half = PUSH[: len(PUSH) // 2]
    writer.write(raw_request(path, half, declared=len(PUSH), extra=intake_headers(path, PUSH)))
    await writer.drain()
    await asyncio.sleep(0.05)  # the intake is now waiting for the rest of the body
    writer.close()
    await writer.wait_closed()

    await until_logged(caplog, LOG_BODY_BROKEN)
    await asyncio.sleep(0.05)  # let aiohttp finish with the request, and log if it would

    assert await store.list_deliveries() == []
    broken = [r for r in caplog.records if r.msg == LOG_BODY_BROKEN]
    assert len(broken) == 1
    assert broken[0].levelname == "INFO"
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [r for r in caplog.records if r.exc_info or r.exc_text] == []
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    "broken",
    [
        ConnectionResetError("Connection lost"),
        aiohttp.ClientPayloadError("Response payload is not completed"),
        web.RequestPayloadError("Not enough data to satisfy content length header."),
    ],
    ids=type,
)
async def test_a_broken_body_is_answered_400_and_logged_once(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture, broken: Exception
) -> None:
    caplog.set_level("DEBUG")
    stream = StreamReader(mock.Mock(_reading_paused=False), 1 << 16)
    stream.feed_data(PUSH[:10])
    stream.set_exception(broken)
    request = make_mocked_request("POST", "/webhooks/github", headers(PUSH), payload=stream)
    handler = github_webhook_handler(SECRET, Inbox(store, nothing), subject_of, lambda: NOW)

    response = await handler(request)

    assert response.status == 400
    assert isinstance(response, web.Response)
    assert isinstance(response.body, bytes)
    assert json.loads(response.body) == {"error": BODY_INCOMPLETE}
    assert await store.list_deliveries() == []
    [line] = caplog.records
    assert (line.levelname, line.msg, line.exc_info) == ("INFO", LOG_BODY_BROKEN, None)
    assert line.getMessage() == LOG_BODY_BROKEN % ("d-1", type(broken).__name__)
