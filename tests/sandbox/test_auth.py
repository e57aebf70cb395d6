"""App JWTs and installation tokens are checked the way GitHub checks them."""

from __future__ import annotations

from sandbox.github_auth import TOKEN_LIFETIME
from sandbox.github_server import GitHubSandbox

from .helpers import (
    INSTALLATION_ID,
    REPO,
    FakeClock,
    RawApi,
    app_jwt,
)


async def test_repo_installation_needs_a_valid_app_jwt(
    sandbox: GitHubSandbox, raw: RawApi, app_keys: tuple[str, str], clock: FakeClock
) -> None:
    good = await raw(
        "GET", f"/repos/{REPO}/installation", auth=f"Bearer {app_jwt(app_keys[0], clock.now)}"
    )
    assert good.status == 200
    assert good.body["id"] == INSTALLATION_ID
    assert good.body["access_tokens_url"].startswith(sandbox.base_url)

    wrong_issuer = app_jwt(app_keys[0], clock.now, app_id="999")
    too_long = app_jwt(app_keys[0], clock.now, lifetime=3600)
    expired = app_jwt(app_keys[0], clock.now - 1200)
    for bad in (wrong_issuer, too_long, expired, "not-a-jwt"):
        answer = await raw("GET", f"/repos/{REPO}/installation", auth=f"Bearer {bad}")
        assert answer.status == 401, bad
    assert sandbox.violations == []


async def test_a_jwt_from_another_key_is_refused(raw: RawApi, clock: FakeClock) -> None:
    from sandbox.keys import generate_app_key

    other_private, _ = generate_app_key()
    answer = await raw(
        "POST",
        f"/app/installations/{INSTALLATION_ID}/access_tokens",
        auth=f"Bearer {app_jwt(other_private, clock.now)}",
    )
    assert answer.status == 401


async def test_uninstalled_repo_has_no_installation(
    sandbox: GitHubSandbox, raw: RawApi, app_keys: tuple[str, str], clock: FakeClock
) -> None:
    sandbox.create_repo("acme/private", files={"a": "b"})
    answer = await raw(
        "GET", "/repos/acme/private/installation", auth=f"Bearer {app_jwt(app_keys[0], clock.now)}"
    )
    assert answer.status == 404


async def test_token_format_and_expiry(
    sandbox: GitHubSandbox, raw: RawApi, app_keys: tuple[str, str], clock: FakeClock
) -> None:
    minted = await raw(
        "POST",
        f"/app/installations/{INSTALLATION_ID}/access_tokens",
        auth=f"Bearer {app_jwt(app_keys[0], clock.now)}",
    )
    assert minted.status == 201
    token = minted.body["token"]
    assert token.startswith("ghs_")
    assert minted.body["expires_at"].endswith("Z")

    assert (await raw("GET", f"/repos/{REPO}", auth=f"Bearer {token}")).status == 200
    clock.now += TOKEN_LIFETIME + 1
    expired = await raw("GET", f"/repos/{REPO}", auth=f"token {token}")
    assert expired.status == 401
    assert expired.body["message"] == "Bad credentials"
    assert sandbox.violations == []


async def test_missing_or_unknown_credentials_are_401(raw: RawApi) -> None:
    assert (await raw("GET", f"/repos/{REPO}", auth="token ghs_nope")).status == 401
    assert (await raw("GET", f"/repos/{REPO}", auth="Basic abc")).status == 401


async def test_token_of_another_installation(sandbox: GitHubSandbox, raw: RawApi) -> None:
    sandbox.create_repo("other/public", files={"x": "y"}, installation_id=INSTALLATION_ID + 1)
    sandbox.create_repo(
        "other/secret", files={"x": "y"}, installation_id=INSTALLATION_ID + 1, private=True
    )
    sandbox.create_repo("other/uninstalled-secret", files={"x": "y"}, private=True)
    # Public repositories are readable by any installation token, not writable.
    assert (await raw("GET", "/repos/other/public")).status == 200
    write = await raw("POST", "/repos/other/public/issues", {"title": "t"})
    assert write.status == 403
    assert write.body["message"] == "Resource not accessible by integration"
    # Private ones the installation cannot see do not exist as far as it can tell.
    assert (await raw("GET", "/repos/other/secret")).status == 404
    assert (await raw("GET", "/repos/other/uninstalled-secret")).status == 404
    assert (await raw("GET", "/repos/nobody/nothing")).status == 404
    assert sandbox.violations == []


async def test_unknown_installation_is_404(
    raw: RawApi, app_keys: tuple[str, str], clock: FakeClock
) -> None:
    answer = await raw(
        "POST",
        "/app/installations/123456/access_tokens",
        auth=f"Bearer {app_jwt(app_keys[0], clock.now)}",
    )
    assert answer.status == 404
