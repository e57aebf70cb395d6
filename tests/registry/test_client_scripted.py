"""RegistryClient against scripted answers: rate limits, outages, token endpoint failures,
revoked tokens, timeouts and the concurrency bound."""

from __future__ import annotations

import asyncio
import base64

import aiohttp
import pytest
from aiohttp import web

from bot.registry.client import (
    BAD_CONCURRENCY,
    MANIFEST_MEDIA_TYPES,
    ImageRef,
    RegistryClient,
)
from bot.registry.probe import (
    CONNECTION_REFUSED,
    DNS_FAILED,
    FORBIDDEN,
    RATE_LIMITED,
    RATE_LIMITED_RETRY,
    SERVER_ERROR,
    TIMED_OUT,
    TOKEN_MISSING,
    TOKEN_REFUSED,
    TOKEN_UNREACHABLE,
    UNAUTHORIZED,
    UNEXPECTED,
    UNREACHABLE,
    TagProbe,
)

from ..scripted_server import ScriptedServer

REF = ImageRef("registry.example", "ns/repo", "tag")
MANIFEST = "/v2/ns/repo/manifests/tag"
TOKEN = "/token"


def answer(status: int, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, headers=headers or {})


def route_status(
    scripted: ScriptedServer, status: int, headers: dict[str, str] | None = None
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return answer(status, headers)

    scripted.route("HEAD", MANIFEST, handler)


def bearer_registry(scripted: ScriptedServer, realm: str, *, valid: set[str], scope: bool) -> None:
    """A registry that accepts the bearer tokens in ``valid`` (changed by the test as it goes)."""
    challenge = f'Bearer realm="{realm}",service="registry.example"'
    if scope:
        challenge += ',scope="repository:ns/repo:pull"'

    async def handler(request: web.Request) -> web.StreamResponse:
        authorization = request.headers.get("Authorization", "")
        if authorization.removeprefix("Bearer ") in valid:
            return answer(200)
        return answer(401, {"WWW-Authenticate": challenge})

    scripted.route("HEAD", MANIFEST, handler)


@pytest.mark.parametrize(
    ("status", "headers", "cell"),
    [
        (429, {"Retry-After": "30"}, "429 " + RATE_LIMITED_RETRY.format(seconds=30)),
        (429, {}, f"429 {RATE_LIMITED}"),
        (429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, f"429 {RATE_LIMITED}"),
        (503, {}, f"503 {SERVER_ERROR}"),
        (500, {}, f"500 {SERVER_ERROR}"),
        (403, {}, f"403 {FORBIDDEN}"),
        (302, {"Location": "/elsewhere"}, f"302 {UNEXPECTED}"),
        (401, {}, f"401 {UNAUTHORIZED}"),  # no challenge to answer
        (401, {"WWW-Authenticate": 'Basic realm="r"'}, f"401 {UNAUTHORIZED}"),  # no credentials
    ],
)
async def test_registry_trouble_is_a_status_and_an_error(
    session: aiohttp.ClientSession,
    scripted: ScriptedServer,
    scripted_url: str,
    status: int,
    headers: dict[str, str],
    cell: str,
) -> None:
    route_status(scripted, status, headers)
    client = RegistryClient(session, endpoint=scripted_url)
    probe = await client.manifest_status(REF)
    assert (probe.status, probe.exists, probe.describe()) == (status, None, cell)
    assert client.requests_made == 1
    [seen] = scripted.requests
    assert seen.headers["accept"] == ", ".join(MANIFEST_MEDIA_TYPES)
    assert "authorization" not in seen.headers


async def test_a_bearer_challenge_without_scope_asks_for_pull_anonymously(
    session: aiohttp.ClientSession, scripted: ScriptedServer, scripted_url: str
) -> None:
    bearer_registry(scripted, scripted_url + TOKEN, valid={"anonymous"}, scope=False)

    async def token(request: web.Request) -> web.StreamResponse:
        # OAuth2's name for it, and no lifetime: the default one applies.
        return web.json_response({"access_token": "anonymous"})

    scripted.route("GET", TOKEN, token)
    client = RegistryClient(session, endpoint=scripted_url)
    assert (await client.manifest_status(REF)).status == 200
    [fetch] = scripted.seen("GET", TOKEN)
    assert fetch.query == "service=registry.example&scope=repository:ns/repo:pull"
    assert "authorization" not in fetch.headers
    assert scripted.seen("HEAD", MANIFEST)[-1].headers["authorization"] == "Bearer anonymous"


async def test_a_refused_token_is_dropped_and_replaced_once(
    session: aiohttp.ClientSession, scripted: ScriptedServer, scripted_url: str
) -> None:
    valid = {"t1"}
    issued = iter(["t1", "t2", "t3"])
    bearer_registry(scripted, scripted_url + TOKEN, valid=valid, scope=True)

    async def token(request: web.Request) -> web.StreamResponse:
        return web.json_response({"token": next(issued), "expires_in": 300})

    scripted.route("GET", TOKEN, token)
    client = RegistryClient(session, endpoint=scripted_url, username="u", password="p")
    assert (await client.manifest_status(REF)).status == 200
    [fetch] = scripted.seen("GET", TOKEN)
    assert fetch.headers["authorization"] == "Basic " + base64.b64encode(b"u:p").decode()

    valid.clear()
    valid.add("t2")  # t1 revoked
    assert (await client.manifest_status(REF)).status == 200
    # t1 sent and refused, t2 fetched, sent and accepted.
    assert len(scripted.seen("GET", TOKEN)) == 2
    assert client.requests_made == 3 + 3

    valid.clear()  # every token refused now: one new token, one retry, then 401
    probe = await client.manifest_status(REF)
    assert (probe.status, probe.error) == (401, UNAUTHORIZED)
    assert len(scripted.seen("GET", TOKEN)) == 3
    assert client.requests_made == 6 + 3


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (web.Response(status=503), TOKEN_REFUSED.format(endpoint="{realm}", status=503)),
        (web.Response(text="<html>"), TOKEN_MISSING.format(endpoint="{realm}")),
        (web.json_response({"expires_in": 60}), TOKEN_MISSING.format(endpoint="{realm}")),
    ],
)
async def test_a_failing_token_endpoint_is_named(
    session: aiohttp.ClientSession,
    scripted: ScriptedServer,
    scripted_url: str,
    response: web.Response,
    error: str,
) -> None:
    realm = scripted_url + TOKEN
    bearer_registry(scripted, realm, valid=set(), scope=True)

    async def token(request: web.Request) -> web.StreamResponse:
        return response

    scripted.route("GET", TOKEN, token)
    probe = await RegistryClient(session, endpoint=scripted_url).manifest_status(REF)
    assert (probe.status, probe.error) == (401, error.format(realm=realm))


async def test_an_unreachable_token_endpoint_is_named(
    session: aiohttp.ClientSession, scripted: ScriptedServer, scripted_url: str, closed_port: int
) -> None:
    realm = f"http://127.0.0.1:{closed_port}/token"
    bearer_registry(scripted, realm, valid=set(), scope=True)
    probe = await RegistryClient(session, endpoint=scripted_url).manifest_status(REF)
    expected = TOKEN_UNREACHABLE.format(endpoint=realm, reason=CONNECTION_REFUSED)
    assert (probe.status, probe.error) == (401, expected)


async def test_a_registry_that_never_answers_times_out(
    session: aiohttp.ClientSession, scripted: ScriptedServer, scripted_url: str
) -> None:
    scripted.hang("HEAD", MANIFEST)
    client = RegistryClient(session, endpoint=scripted_url, timeout=0.05)
    probe = await client.manifest_status(REF)
    assert probe.status is None
    assert probe.error == UNREACHABLE.format(reason=TIMED_OUT.format(seconds=0.05))


async def test_without_an_endpoint_the_reference_host_is_asked_over_https(
    session: aiohttp.ClientSession, closed_port: int
) -> None:
    image = ImageRef.parse(f"127.0.0.1:{closed_port}/ns/repo:tag")
    probe = await RegistryClient(session).manifest_status(image)
    assert probe.error == UNREACHABLE.format(reason=CONNECTION_REFUSED)


async def test_an_unknown_host_is_a_dns_failure(session: aiohttp.ClientSession) -> None:
    # .invalid never resolves (RFC 6761).
    image = ImageRef.parse("registry.invalid/ns/repo:tag")
    probe = await RegistryClient(session, timeout=5).manifest_status(image)
    assert probe.error == UNREACHABLE.format(reason=DNS_FAILED.format(host="registry.invalid"))


class GatedClient(RegistryClient):
    """Counts probes in flight, and holds each until ``bound`` of them are."""

    def __init__(self, session: aiohttp.ClientSession, endpoint: str, bound: int) -> None:
        super().__init__(session, endpoint=endpoint)
        self.bound = bound
        self.in_flight = 0
        self.most = 0
        self.full = asyncio.Event()

    async def manifest_status(self, ref: ImageRef) -> TagProbe:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        # gather starts every probe in one turn of the loop: without a bound all of them
        # are counted before the first is let through, with one only ``bound`` are.
        if self.in_flight == self.bound:
            self.full.set()
        await self.full.wait()
        try:
            return await super().manifest_status(ref)
        finally:
            self.in_flight -= 1


async def test_manifest_statuses_bounds_concurrency_and_keeps_the_order(
    session: aiohttp.ClientSession, scripted: ScriptedServer, scripted_url: str
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return answer(200 if int(request.path.rpartition("/")[2]) % 2 == 0 else 404)

    refs = [ImageRef("registry.example", "ns/repo", str(n)) for n in range(8)]
    for ref in refs:
        scripted.route("HEAD", f"/v2/ns/repo/manifests/{ref.tag}", handler)
    client = GatedClient(session, scripted_url, bound=3)

    probes = await client.manifest_statuses(refs, concurrency=3)

    assert [probe.ref for probe in probes] == refs
    assert [probe.status for probe in probes] == [200, 404] * 4
    assert client.most == 3
    with pytest.raises(ValueError, match=BAD_CONCURRENCY):
        await client.manifest_statuses(refs, concurrency=0)


async def test_a_dropped_connection_is_unreachable(
    session: aiohttp.ClientSession, scripted: ScriptedServer, scripted_url: str
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        return answer(200)

    scripted.route("HEAD", MANIFEST, handler)
    probe = await RegistryClient(session, endpoint=scripted_url).manifest_status(REF)
    assert probe.status is None
    assert probe.error is not None
    assert probe.error.startswith("unreachable: ")
