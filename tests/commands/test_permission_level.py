"""A user's access to the repository, read from the GitHub stand-in with the bot's client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import gidgethub
import gidgethub.abc
import pytest
from gidgethub.abc import GitHubAPI
from gidgethub.aiohttp import GitHubAPI as PlainGitHubAPI

from bot.github.changes import Repo
from bot.github.permissions import permission_level
from sandbox.harness import Harness, harness

REPO = Repo("acme", "widgets")
INSTALLATION_ID = 31
OPERATION = "repos/get-collaborator-permission-level"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Harness]:
    async with harness(tmp_path, repositories=(REPO.full_name,)) as h:
        h.sandbox.create_repo(
            REPO.full_name, files={"README.md": "# widgets\n"}, installation_id=INSTALLATION_ID
        )
        yield h


@pytest.fixture
async def bot_client(env: Harness) -> GitHubAPI:
    """The client the bot's handlers get: installation token, retries, timeouts."""
    return await env.running.services.github.repo_client(REPO.full_name)


@pytest.fixture
async def plain_client(env: Harness) -> AsyncIterator[GitHubAPI]:
    """gidgethub without the bot's retry policy, to see a server error as it comes."""
    token = await env.running.services.github.installation_token(INSTALLATION_ID)
    async with aiohttp.ClientSession() as session:
        yield PlainGitHubAPI(
            session, "followup-bot-tests", oauth_token=token, base_url=env.sandbox.base_url
        )


@pytest.mark.parametrize("level", ["admin", "maintain", "write", "triage", "read", "none"])
async def test_each_level(env: Harness, bot_client: GitHubAPI, level: str) -> None:
    env.sandbox.set_permission(REPO.full_name, "someone", level)
    assert await permission_level(bot_client, REPO, "someone") == level
    assert env.sandbox.violations == []


async def test_maintainers_are_not_read_as_writers(env: Harness, bot_client: GitHubAPI) -> None:
    # The legacy `permission` field says "write" for maintain; role_name tells them apart.
    env.sandbox.set_permission(REPO.full_name, "maint", "maintain")
    assert await permission_level(bot_client, REPO, "maint") == "maintain"
    answer = await bot_client.getitem(f"/repos/{REPO.full_name}/collaborators/maint/permission")
    assert answer["permission"] == "write"


async def test_the_owner_is_admin(bot_client: GitHubAPI) -> None:
    assert await permission_level(bot_client, REPO, "acme") == "admin"


async def test_an_unknown_user_has_no_access(env: Harness, bot_client: GitHubAPI) -> None:
    assert await permission_level(bot_client, REPO, "ghost") == "none"
    assert [r.status for r in env.sandbox.requests if r.operation_id == OPERATION] == [404]


async def test_a_bot_login_is_escaped(env: Harness, bot_client: GitHubAPI) -> None:
    env.sandbox.set_permission(REPO.full_name, "helper[bot]", "write")
    assert await permission_level(bot_client, REPO, "helper[bot]") == "write"


async def test_a_server_error_is_not_read_as_no_access(
    env: Harness, plain_client: GitHubAPI
) -> None:
    env.sandbox.set_permission(REPO.full_name, "writer", "write")
    env.sandbox.faults.fail_next(1, status=503, operation=OPERATION)
    with pytest.raises(gidgethub.GitHubBroken):
        await permission_level(plain_client, REPO, "writer")
    assert await permission_level(plain_client, REPO, "writer") == "write"


# --- answers the stand-in does not give: custom roles, odd wording --------------------------


class CannedGitHub(gidgethub.abc.GitHubAPI):
    """Answers every request with one JSON body (sans-I/O: gidgethub still decodes it)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__("followup-bot-tests")
        self.status = status
        self.body = body

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        return self.status, {"content-type": "application/json"}, json.dumps(self.body).encode()

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("no sleeping in unit tests")


@pytest.mark.parametrize(
    ("body", "level"),
    [
        ({"permission": "write", "role_name": "ci-reviewer"}, "write"),  # a custom role
        ({"permission": "read", "role_name": "triage"}, "triage"),
        ({"permission": "admin"}, "admin"),
        ({"permission": "owner", "role_name": "boss"}, "none"),
        ({}, "none"),
        (["write"], "none"),
    ],
)
async def test_wording_of_the_answer(body: Any, level: str) -> None:
    assert await permission_level(CannedGitHub(200, body), REPO, "someone") == level


async def test_a_forbidden_answer_is_raised() -> None:
    refused = CannedGitHub(403, {"message": "Resource not accessible by integration"})
    with pytest.raises(gidgethub.BadRequest) as caught:
        await permission_level(refused, REPO, "someone")
    assert int(caught.value.status_code) == 403
