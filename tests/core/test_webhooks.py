from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from bot.inbox import Inbox
from bot.store import Delivery, DeliveryStatus
from bot.store_sqlite import SQLiteStore
from bot.webhooks import (
    BAD_SIGNATURE,
    MAX_BODY,
    MISSING_HEADERS,
    NOT_A_JSON_OBJECT,
    NOT_STORED,
    TOO_LARGE,
    github_webhook_handler,
    healthz,
    verify_github_signature,
)

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
