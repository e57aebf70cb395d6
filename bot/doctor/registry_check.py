"""The doctor's registry check: the CI image registry a repository's config names
(``images.registry_url``) answers, and takes the configured credentials.

It asks what every client of the distribution API asks first, ``GET /v2/``: 200 means
the registry serves this client as it is; a 401 challenge is answered as the image
check answers it (a token from the realm, or basic credentials), and the answer to the
second ``GET /v2/`` says whether those credentials are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp

from bot.core.http_policy import TRANSPORT_ERRORS
from bot.doctor import fixes
from bot.doctor.result import CheckResult, failed, ok
from bot.registry.challenge import basic_authorization, usable_challenge
from bot.registry.tokens import read_token

CHECK_REGISTRY = "registry {repo}"
# No answer, or one that is not JSON where a token was due.
UNANSWERED: tuple[type[BaseException], ...] = (*TRANSPORT_ERRORS, ValueError)
VERSION_PATH = "/v2/"

DETAIL_OPEN = "{url} answers without credentials"
DETAIL_ACCEPTED = "{url} accepts the {how}"
DETAIL_REFUSED = "{url} answered {status} to the {how}"
DETAIL_TOKEN_REFUSED = "{url}'s token endpoint {realm} answered {status}"
DETAIL_NO_TOKEN = "{url}'s token endpoint {realm} gave no token"
DETAIL_WANTS_CREDENTIALS = "{url} asks for credentials ({status}) and none are set"
DETAIL_ANSWERED = "{url}: GET /v2/ answered {status}"
DETAIL_UNREACHABLE = "{url}: {error}"
HOW_TOKEN = "token issued to {who}"
HOW_BASIC = "basic credentials"
ANONYMOUS = "an anonymous client"
CREDENTIALS = "the configured user"


@dataclass(frozen=True)
class RegistryAccess:
    session: aiohttp.ClientSession
    username: str | None
    password: str | None

    @property
    def basic(self) -> str | None:
        if self.username is None or self.password is None:
            return None
        return basic_authorization(self.username, self.password)


async def check_registry(access: RegistryAccess, repo: str, url: str) -> CheckResult:
    check = CHECK_REGISTRY.format(repo=repo)
    base = url.rstrip("/")
    try:
        return await _check(access, check, repo, base)
    except UNANSWERED as exc:
        detail = DETAIL_UNREACHABLE.format(url=base, error=str(exc) or type(exc).__name__)
        return failed(check, detail, fixes.FIX_REGISTRY_UNREACHABLE.format(repo=repo))


async def _check(access: RegistryAccess, check: str, repo: str, base: str) -> CheckResult:
    status, challenges = await _version(access, base, None)
    if status == 200:
        return ok(check, DETAIL_OPEN.format(url=base))
    challenge = usable_challenge(challenges) if status == 401 else None
    if challenge is None:
        detail = DETAIL_ANSWERED.format(url=base, status=status)
        return failed(check, detail, fixes.FIX_REGISTRY_UNREACHABLE.format(repo=repo))
    basic = access.basic
    if challenge.scheme == "basic":
        if basic is None:
            detail = DETAIL_WANTS_CREDENTIALS.format(url=base, status=status)
            return failed(check, detail, fixes.FIX_REGISTRY_CREDENTIALS)
        authorization, how = basic, HOW_BASIC
    else:
        realm = challenge.param("realm") or ""
        query = {"service": challenge.param("service") or ""}
        headers = {"Authorization": basic} if basic is not None else {}
        async with access.session.get(realm, params=query, headers=headers) as answer:
            if answer.status != 200:
                detail = DETAIL_TOKEN_REFUSED.format(url=base, realm=realm, status=answer.status)
                return failed(check, detail, fixes.FIX_REGISTRY_CREDENTIALS)
            issued = read_token(await answer.json(content_type=None))
        if issued is None:
            detail = DETAIL_NO_TOKEN.format(url=base, realm=realm)
            return failed(check, detail, fixes.FIX_REGISTRY_CREDENTIALS)
        authorization = f"Bearer {issued.token}"
        how = HOW_TOKEN.format(who=CREDENTIALS if basic is not None else ANONYMOUS)
    status, _ = await _version(access, base, authorization)
    if status == 200:
        return ok(check, DETAIL_ACCEPTED.format(url=base, how=how))
    detail = DETAIL_REFUSED.format(url=base, status=status, how=how)
    return failed(check, detail, fixes.FIX_REGISTRY_CREDENTIALS)


async def _version(
    access: RegistryAccess, base: str, authorization: str | None
) -> tuple[int, tuple[str, ...]]:
    headers = {"Authorization": authorization} if authorization is not None else {}
    async with access.session.get(
        base + VERSION_PATH, headers=headers, allow_redirects=False
    ) as answer:
        return answer.status, tuple(answer.headers.getall("WWW-Authenticate", ()))
