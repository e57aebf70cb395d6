"""POST /webhooks/buildkite: signature or token, dedupe by request id or body hash."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from bot.service.inbox import Inbox
from bot.service.webhooks import (
    BAD_BUILDKITE_SIGNATURE,
    BAD_BUILDKITE_TOKEN,
    MISSING_BUILDKITE_EVENT,
    NOT_A_JSON_OBJECT,
    NOT_STORED,
    ONE_BUILDKITE_CREDENTIAL,
    TOO_LARGE,
    buildkite_delivery_id,
    buildkite_webhook_handler,
    verify_buildkite_signature,
    verify_buildkite_token,
)
from bot.store.protocol import Delivery, DeliveryStatus
from bot.store.sqlite import SQLiteStore

Client = TestClient[web.Request, web.Application]
ClientFactory = Callable[[web.Application], Awaitable[Client]]

SECRET = b"buildkite-signing-secret"
TOKEN = b"buildkite-plain-token"
NOW = 1_700_000_000.0
PATH = "/webhooks/buildkite"


def sign(body: bytes, *, timestamp: int = int(NOW), secret: bytes = SECRET) -> str:
    digest = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"timestamp={timestamp},signature={digest}"


def subject_of(event: str, payload: Mapping[str, Any]) -> str:
    return f"build:{payload['build']['id']}"


async def nothing(delivery: Delivery) -> None:
    """The inbox is never started: deliveries stay QUEUED for inspection."""


BUILD_FINISHED = json.dumps(
    {"event": "build.finished", "build": {"id": "b-1", "number": 7, "state": "failed"}}
).encode()
BODY_ID = "bk:" + hashlib.sha256(BUILD_FINISHED).hexdigest()


def make_app(inbox: Inbox, **options: Any) -> web.Application:
    settings: dict[str, Any] = {"signature_secret": SECRET, "token": None, "clock": lambda: NOW}
    settings.update(options)
    app = web.Application()
    handler = buildkite_webhook_handler(inbox=inbox, subject_of=subject_of, **settings)
    app.router.add_post(PATH, handler)
    return app


@pytest.fixture
async def client(store: SQLiteStore, aiohttp_client: ClientFactory) -> Client:
    return await aiohttp_client(make_app(Inbox(store, nothing)))


@pytest.fixture
async def token_client(store: SQLiteStore, aiohttp_client: ClientFactory) -> Client:
    return await aiohttp_client(make_app(Inbox(store, nothing), signature_secret=None, token=TOKEN))


def signed(body: bytes, **extra: str) -> dict[str, str]:
    return {"X-Buildkite-Event": "build.finished", "X-Buildkite-Signature": sign(body), **extra}


# --- the signature ---------------------------------------------------------------------


def test_signature_verification() -> None:
    body = BUILD_FINISHED
    assert verify_buildkite_signature(SECRET, body, sign(body), now=NOW)
    upper = sign(body).replace("signature=", "SIGNATURE=").upper().replace("TIMESTAMP", "timestamp")
    assert verify_buildkite_signature(SECRET, body, upper, now=NOW)
    spaced = sign(body).replace(",", " , ")
    assert verify_buildkite_signature(SECRET, body, spaced, now=NOW)
    reordered = ",".join(reversed(sign(body).split(",")))
    assert verify_buildkite_signature(SECRET, body, reordered, now=NOW)
    assert not verify_buildkite_signature(b"wrong secret", body, sign(body), now=NOW)
    assert not verify_buildkite_signature(SECRET, body + b" ", sign(body), now=NOW)
    assert not verify_buildkite_signature(b"", body, sign(body, secret=b""), now=NOW)


def test_signature_covers_the_timestamp() -> None:
    # Moving the timestamp of a captured signature (to make it fresh) breaks it.
    old = sign(BUILD_FINISHED, timestamp=int(NOW) - 1000)
    moved = old.replace(f"timestamp={int(NOW) - 1000}", f"timestamp={int(NOW)}")
    assert not verify_buildkite_signature(SECRET, BUILD_FINISHED, moved, now=NOW)


@pytest.mark.parametrize(
    ("age", "fresh"), [(0, True), (300, True), (301, False), (-300, True), (-301, False)]
)
def test_stale_signatures_are_refused(age: int, fresh: bool) -> None:
    header = sign(BUILD_FINISHED, timestamp=int(NOW) - age)
    assert verify_buildkite_signature(SECRET, BUILD_FINISHED, header, now=NOW) is fresh


def test_max_age_is_configurable() -> None:
    header = sign(BUILD_FINISHED, timestamp=int(NOW) - 50)
    assert verify_buildkite_signature(SECRET, BUILD_FINISHED, header, now=NOW, max_age=60)
    assert not verify_buildkite_signature(SECRET, BUILD_FINISHED, header, now=NOW, max_age=40)


GOOD = sign(BUILD_FINISHED)
GOOD_HEX = GOOD.split("signature=")[1]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "garbage",
        GOOD_HEX,
        f"timestamp={int(NOW)}",
        f"signature={GOOD_HEX}",
        f"timestamp=,signature={GOOD_HEX}",
        f"timestamp=soon,signature={GOOD_HEX}",
        f"timestamp=-{int(NOW)},signature={GOOD_HEX}",
        f"timestamp=１７００００００００,signature={GOOD_HEX}",  # noqa: RUF001 (full-width digits)
        f"timestamp={int(NOW)},signature={GOOD_HEX[:-2]}",
        f"timestamp={int(NOW)},signature={GOOD_HEX[:-1]}g",
        f"timestamp={int(NOW)},signature=ü{GOOD_HEX[1:]}",
        f"timestamp={int(NOW)};signature={GOOD_HEX}",
        f"{GOOD},signature={'0' * 64}",  # a second signature smuggled in
        f"timestamp={int(NOW)},signature={'0' * 64},signature={GOOD_HEX}",
        f"timestamp=1,{GOOD}",  # which timestamp was signed?
        f"{GOOD},",
    ],
)
def test_malformed_signature_headers_are_refused(header: str | None) -> None:
    assert not verify_buildkite_signature(SECRET, BUILD_FINISHED, header, now=NOW)


def test_token_verification() -> None:
    assert verify_buildkite_token(TOKEN, TOKEN.decode())
    assert verify_buildkite_token(TOKEN, f" {TOKEN.decode()} ")
    assert not verify_buildkite_token(TOKEN, TOKEN.decode() + "x")
    assert not verify_buildkite_token(TOKEN, "ü")
    assert not verify_buildkite_token(TOKEN, None)
    assert not verify_buildkite_token(TOKEN, "")
    assert not verify_buildkite_token(b"", "")


def test_delivery_id() -> None:
    assert buildkite_delivery_id("req-1", b"{}") == "req-1"
    assert buildkite_delivery_id(" ", b"{}") == "bk:" + hashlib.sha256(b"{}").hexdigest()
    assert buildkite_delivery_id(None, BUILD_FINISHED) == BODY_ID


# --- the handler, signature mode -----------------------------------------------------------


async def test_a_signed_delivery_is_stored_then_202(client: Client, store: SQLiteStore) -> None:
    response = await client.post(PATH, data=BUILD_FINISHED, headers=signed(BUILD_FINISHED))
    assert response.status == 202
    assert await response.json() == {"status": "accepted"}
    record = await store.get_delivery(BODY_ID)
    assert record is not None
    assert record.status is DeliveryStatus.QUEUED
    assert record.delivery == Delivery(
        delivery_id=BODY_ID,
        source="buildkite",
        event="build.finished",
        payload=BUILD_FINISHED,
        subject="build:b-1",
        received_at=NOW,
    )


async def test_the_same_body_again_is_a_duplicate(client: Client, store: SQLiteStore) -> None:
    first = await client.post(PATH, data=BUILD_FINISHED, headers=signed(BUILD_FINISHED))
    again = await client.post(PATH, data=BUILD_FINISHED, headers=signed(BUILD_FINISHED))
    assert (first.status, again.status) == (202, 202)
    assert await again.json() == {"status": "duplicate"}
    assert len(await store.list_deliveries()) == 1


async def test_the_request_id_is_the_dedupe_key_when_present(
    client: Client, store: SQLiteStore
) -> None:
    for request_id in ("req-1", "req-2", "req-1"):
        headers = signed(BUILD_FINISHED, **{"X-Buildkite-Request": request_id})
        response = await client.post(PATH, data=BUILD_FINISHED, headers=headers)
        assert response.status == 202
    ids = sorted(r.delivery.delivery_id for r in await store.list_deliveries())
    assert ids == ["req-1", "req-2"]


async def test_an_unreadable_subject_falls_back_to_the_delivery_id(
    client: Client, store: SQLiteStore
) -> None:
    body = b'{"event": "ping"}'
    response = await client.post(
        PATH, data=body, headers={**signed(body), "X-Buildkite-Event": "ping"}
    )
    assert response.status == 202
    (record,) = await store.list_deliveries()
    assert record.delivery.subject == "delivery:" + record.delivery.delivery_id


@pytest.mark.parametrize(
    "signature",
    [
        sign(BUILD_FINISHED, secret=b"wrong secret"),
        sign(BUILD_FINISHED, timestamp=int(NOW) - 301),
        sign(BUILD_FINISHED + b"\n"),
        "timestamp=1,signature=zz",
        "",
    ],
)
async def test_bad_or_stale_signatures_are_401(
    client: Client, store: SQLiteStore, signature: str
) -> None:
    headers = {**signed(BUILD_FINISHED), "X-Buildkite-Signature": signature}
    response = await client.post(PATH, data=BUILD_FINISHED, headers=headers)
    assert response.status == 401
    assert await response.json() == {"error": BAD_BUILDKITE_SIGNATURE}
    assert await store.list_deliveries() == []


async def test_a_token_is_no_substitute_for_the_signature(client: Client) -> None:
    headers = {"X-Buildkite-Event": "build.finished", "X-Buildkite-Token": TOKEN.decode()}
    response = await client.post(PATH, data=BUILD_FINISHED, headers=headers)
    assert response.status == 401


@pytest.mark.parametrize("event", [None, "", "  "])
async def test_a_missing_event_header_is_400(
    client: Client, store: SQLiteStore, event: str | None
) -> None:
    headers = signed(BUILD_FINISHED)
    if event is None:
        del headers["X-Buildkite-Event"]
    else:
        headers["X-Buildkite-Event"] = event
    response = await client.post(PATH, data=BUILD_FINISHED, headers=headers)
    assert response.status == 400
    assert await response.json() == {"error": MISSING_BUILDKITE_EVENT}
    assert await store.list_deliveries() == []


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b"null", b"\xff{", b"[" * 100_000])
async def test_signed_bodies_that_are_not_json_objects_are_400(
    client: Client, store: SQLiteStore, body: bytes
) -> None:
    response = await client.post(PATH, data=body, headers=signed(body))
    assert response.status == 400
    assert await response.json() == {"error": NOT_A_JSON_OBJECT}
    assert await store.list_deliveries() == []


def padded(size: int) -> bytes:
    """A build payload of exactly ``size`` bytes."""
    skeleton = json.dumps({"build": {"id": "b-1"}, "pad": ""}).encode()
    return json.dumps({"build": {"id": "b-1"}, "pad": "x" * (size - len(skeleton))}).encode()


async def test_the_body_cap_is_413(store: SQLiteStore, aiohttp_client: ClientFactory) -> None:
    client = await aiohttp_client(make_app(Inbox(store, nothing), max_body=1000))
    fits, too_big = padded(1000), padded(1001)
    assert (await client.post(PATH, data=fits, headers=signed(fits))).status == 202
    response = await client.post(PATH, data=too_big, headers=signed(too_big))
    assert response.status == 413
    assert await response.json() == {"error": TOO_LARGE}
    assert len(await store.list_deliveries()) == 1


async def test_a_large_body_is_checked_and_hashed_off_the_loop(
    client: Client, store: SQLiteStore
) -> None:
    body = padded(1024 * 1024)
    response = await client.post(PATH, data=body, headers=signed(body))
    assert response.status == 202
    record = await store.get_delivery("bk:" + hashlib.sha256(body).hexdigest())
    assert record is not None
    assert record.delivery.payload == body
    bad = await client.post(
        PATH, data=body, headers={**signed(body), "X-Buildkite-Signature": sign(b"x")}
    )
    assert bad.status == 401


async def test_a_store_failure_is_503(store: SQLiteStore, aiohttp_client: ClientFactory) -> None:
    client = await aiohttp_client(make_app(Inbox(store, nothing)))
    await store.close()
    response = await client.post(PATH, data=BUILD_FINISHED, headers=signed(BUILD_FINISHED))
    assert response.status == 503
    assert await response.json() == {"error": NOT_STORED}


async def test_the_max_age_option_reaches_the_check(
    store: SQLiteStore, aiohttp_client: ClientFactory
) -> None:
    client = await aiohttp_client(make_app(Inbox(store, nothing), max_age=10.0))
    headers = {
        **signed(BUILD_FINISHED),
        "X-Buildkite-Signature": sign(BUILD_FINISHED, timestamp=int(NOW) - 11),
    }
    assert (await client.post(PATH, data=BUILD_FINISHED, headers=headers)).status == 401


# --- the handler, token mode -----------------------------------------------------------------


async def test_token_mode_accepts_the_right_token(token_client: Client, store: SQLiteStore) -> None:
    headers = {"X-Buildkite-Event": "build.finished", "X-Buildkite-Token": TOKEN.decode()}
    response = await token_client.post(PATH, data=BUILD_FINISHED, headers=headers)
    assert response.status == 202
    record = await store.get_delivery(BODY_ID)
    assert record is not None
    assert record.delivery.source == "buildkite"


@pytest.mark.parametrize("given", [None, "", "wrong-token"])
async def test_token_mode_refuses_a_wrong_or_missing_token(
    token_client: Client, store: SQLiteStore, given: str | None
) -> None:
    headers = {"X-Buildkite-Event": "build.finished"}
    if given is not None:
        headers["X-Buildkite-Token"] = given
    response = await token_client.post(PATH, data=BUILD_FINISHED, headers=headers)
    assert response.status == 401
    assert await response.json() == {"error": BAD_BUILDKITE_TOKEN}
    assert await store.list_deliveries() == []


async def test_token_mode_ignores_a_signature(token_client: Client) -> None:
    response = await token_client.post(PATH, data=BUILD_FINISHED, headers=signed(BUILD_FINISHED))
    assert response.status == 401


@pytest.mark.parametrize(
    ("signature_secret", "token"),
    [(None, None), (SECRET, TOKEN), (b"", None), (None, b"")],
)
async def test_exactly_one_credential_must_be_configured(
    store: SQLiteStore, signature_secret: bytes | None, token: bytes | None
) -> None:
    with pytest.raises(ValueError, match=ONE_BUILDKITE_CREDENTIAL):
        make_app(Inbox(store, nothing), signature_secret=signature_secret, token=token)


async def test_secrets_and_bodies_are_never_logged(
    client: Client, token_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    body = json.dumps({"build": {"id": "b-9"}, "env": {"SECRET": "very-private"}}).encode()
    await client.post(PATH, data=body, headers=signed(body))
    await token_client.post(
        PATH, data=body, headers={"X-Buildkite-Event": "e", "X-Buildkite-Token": "guess"}
    )
    text = caplog.text
    assert "accepted build.finished delivery bk:" in text
    assert SECRET.decode() not in text
    assert TOKEN.decode() not in text
    assert "very-private" not in text
