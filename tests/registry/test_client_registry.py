"""RegistryClient against a real distribution registry: no auth, basic, and bearer tokens."""

from __future__ import annotations

import aiohttp

from bot.registry.client import ImageRef, RegistryClient
from bot.registry.probe import (
    CONNECTION_REFUSED,
    TOKEN_REFUSED,
    UNAUTHORIZED,
    UNREACHABLE,
    TagProbe,
)
from sandbox.oci_registry import RegistryServer

from ..github_client.github_fakes import FakeClock

REPOSITORY = "vllm/ci-postmerge"


def ref(registry: RegistryServer, tag: str, repository: str = REPOSITORY) -> ImageRef:
    return ImageRef.parse(f"{registry.host}/{repository}:{tag}")


def client_for(
    session: aiohttp.ClientSession,
    registry: RegistryServer,
    *,
    password: str | None = None,
    anonymous: bool = False,
    clock: FakeClock | None = None,
) -> RegistryClient:
    if anonymous:
        return RegistryClient(session, endpoint=registry.url)
    return RegistryClient(
        session,
        endpoint=registry.url,
        username=registry.username,
        password=password or registry.password,
        clock=clock or FakeClock(0.0),
    )


async def test_open_registry_pushed_tag_200_and_others_404(
    session: aiohttp.ClientSession, open_registry: RegistryServer
) -> None:
    await open_registry.push_image(REPOSITORY, "abc123-cpu")
    client = client_for(session, open_registry, anonymous=True)

    pushed = await client.manifest_status(ref(open_registry, "abc123-cpu"))
    missing = await client.manifest_status(ref(open_registry, "never-pushed"))
    other_repository = await client.manifest_status(ref(open_registry, "abc123-cpu", "vllm/other"))

    assert pushed == TagProbe(ref(open_registry, "abc123-cpu"), 200)
    assert pushed.exists is True
    assert (missing.status, missing.exists, missing.describe()) == (404, False, "404")
    assert other_repository.status == 404
    assert client.requests_made == 3  # one HEAD each, nothing else


async def test_basic_auth_answers_the_challenge_then_sends_credentials_first(
    session: aiohttp.ClientSession, basic_registry: RegistryServer
) -> None:
    await basic_registry.push_image(REPOSITORY, "v1")
    client = client_for(session, basic_registry)

    first = await client.manifest_status(ref(basic_registry, "v1"))
    assert first.status == 200
    assert client.requests_made == 2  # challenged, then answered
    missing = await client.manifest_status(ref(basic_registry, "v2"))
    assert missing.status == 404
    assert client.requests_made == 3  # the credentials went with the first request


async def test_basic_auth_with_a_wrong_password_is_401_without_raising(
    session: aiohttp.ClientSession, basic_registry: RegistryServer
) -> None:
    await basic_registry.push_image(REPOSITORY, "v1")
    client = client_for(session, basic_registry, password="wrong")

    probe = await client.manifest_status(ref(basic_registry, "v1"))
    assert (probe.status, probe.error, probe.exists) == (401, UNAUTHORIZED, None)
    assert probe.describe() == "401 unauthorized"
    assert client.requests_made == 2  # retried once, not again
    again = await client.manifest_status(ref(basic_registry, "v1"))
    assert again.status == 401
    assert client.requests_made == 3  # the refused credentials are not sent twice


async def test_basic_auth_without_credentials_is_401(
    session: aiohttp.ClientSession, basic_registry: RegistryServer
) -> None:
    client = client_for(session, basic_registry, anonymous=True)
    probe = await client.manifest_status(ref(basic_registry, "v1"))
    assert (probe.status, probe.error) == (401, UNAUTHORIZED)
    assert client.requests_made == 1


async def test_token_auth_fetches_one_token_per_repository(
    session: aiohttp.ClientSession, token_registry: RegistryServer
) -> None:
    await token_registry.push_image(REPOSITORY, "abc")
    await token_registry.push_image("vllm/other", "abc")
    pushes = token_registry.token_requests
    client = client_for(session, token_registry)

    statuses = [
        (await client.manifest_status(ref(token_registry, tag))).status
        for tag in ("abc", "missing", "abc")
    ]
    assert statuses == [200, 404, 200]
    assert token_registry.token_requests - pushes == 1
    # 401, token, 200; then the token goes with the first request.
    assert client.requests_made == 5

    other = await client.manifest_status(ref(token_registry, "abc", "vllm/other"))
    assert other.status == 200
    assert token_registry.token_requests - pushes == 2  # another scope, another token
    assert token_registry.token_server is not None
    assert token_registry.token_server.requests[-1] == "repository:vllm/other:pull"


async def test_concurrent_probes_of_one_repository_share_one_token(
    session: aiohttp.ClientSession, token_registry: RegistryServer
) -> None:
    await token_registry.push_image(REPOSITORY, "t0")
    pushes = token_registry.token_requests
    client = client_for(session, token_registry)

    probes = await client.manifest_statuses(
        [ref(token_registry, f"t{n}") for n in range(6)], concurrency=4
    )
    assert [probe.status for probe in probes] == [200, 404, 404, 404, 404, 404]
    assert token_registry.token_requests - pushes == 1


async def test_an_expired_token_is_fetched_again(
    session: aiohttp.ClientSession, token_registry: RegistryServer, clock: FakeClock
) -> None:
    await token_registry.push_image(REPOSITORY, "abc")
    pushes = token_registry.token_requests
    client = client_for(session, token_registry, clock=clock)
    assert token_registry.token_server is not None
    lifetime = token_registry.token_server.expires_in

    assert (await client.manifest_status(ref(token_registry, "abc"))).status == 200
    clock.advance(lifetime - 11)  # still within its life less the margin
    assert (await client.manifest_status(ref(token_registry, "abc"))).status == 200
    assert token_registry.token_requests - pushes == 1
    clock.advance(1)
    assert (await client.manifest_status(ref(token_registry, "abc"))).status == 200
    assert token_registry.token_requests - pushes == 2


async def test_token_auth_with_a_wrong_password_names_the_token_endpoint(
    session: aiohttp.ClientSession, token_registry: RegistryServer
) -> None:
    assert token_registry.token_server is not None
    client = client_for(session, token_registry, password="wrong")
    probe = await client.manifest_status(ref(token_registry, "abc"))
    expected = TOKEN_REFUSED.format(endpoint=token_registry.token_server.realm, status=401)
    assert (probe.status, probe.error, probe.exists) == (401, expected, None)


async def test_token_auth_anonymous_is_refused_by_the_token_endpoint(
    session: aiohttp.ClientSession, token_registry: RegistryServer
) -> None:
    client = client_for(session, token_registry, anonymous=True)
    probe = await client.manifest_status(ref(token_registry, "abc"))
    assert probe.status == 401
    assert probe.error is not None
    assert probe.error.startswith("token endpoint ")


async def test_a_registry_that_is_down_is_unreachable_not_an_exception(
    session: aiohttp.ClientSession, closed_port: int
) -> None:
    client = RegistryClient(session, endpoint=f"http://127.0.0.1:{closed_port}")
    image = ImageRef.parse(f"127.0.0.1:{closed_port}/{REPOSITORY}:abc")
    probe = await client.manifest_status(image)
    assert probe == TagProbe(image, None, UNREACHABLE.format(reason=CONNECTION_REFUSED))
    assert probe.describe() == "unreachable: connection refused"
    assert probe.exists is None
