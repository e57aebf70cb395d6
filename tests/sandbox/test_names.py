"""Owner and repository names reach the same records in any casing, as on GitHub, and
every answer spells them as the repository was created."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_names import Caseless
from sandbox.github_server import GitHubSandbox

from .helpers import INSTALLATION_ID, FakeClock, RawApi, Receiver, app_jwt, pygithub
from .test_graphql_pulls import SandboxGraphQL

CANONICAL = "NVIDIA/cutlass"
SPELLINGS = ("nvidia/cutlass", "NVIDIA/CUTLASS", "Nvidia/Cutlass")
BRANCH = "followup-bot/bump/cutlass"
NAME_QUERY = """
query($owner: String!, $name: String!) {
  repository(owner: $owner, name: $name) { nameWithOwner }
}
"""


@pytest.fixture
def cutlass(sandbox: GitHubSandbox) -> GitHubSandbox:
    sandbox.create_repo(
        CANONICAL, files={"CMakeLists.txt": "project(cutlass)\n"}, installation_id=INSTALLATION_ID
    )
    return sandbox


def _names(repo: dict[str, Any]) -> tuple[str, str, str]:
    return repo["full_name"], repo["owner"]["login"], repo["name"]


def test_caseless_keeps_the_stored_spelling() -> None:
    table: Caseless[int] = Caseless()
    table["NVIDIA/cutlass"] = 1
    assert table["nvidia/CUTLASS"] == 1
    assert "Nvidia/Cutlass" in table
    assert list(table) == ["NVIDIA/cutlass"]
    assert table.canonical("nvidia/cutlass") == "NVIDIA/cutlass"
    del table["NVIDIA/CUTLASS"]
    assert (len(table), table.canonical("nvidia/cutlass")) == (0, None)


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_rest_paths_ignore_case(cutlass: GitHubSandbox, raw: RawApi, spelling: str) -> None:
    got = await raw("GET", f"/repos/{spelling}")
    assert got.status == 200
    assert _names(got.body) == (CANONICAL, "NVIDIA", "cutlass")
    branch = await raw("GET", f"/repos/{spelling}/branches/main")
    assert branch.body["commit"]["sha"] == cutlass.head(CANONICAL)
    contents = await raw("GET", f"/repos/{spelling}/contents/CMakeLists.txt")
    assert contents.status == 200
    # Every URL handed out names the repository as it was created.
    assert f"/repos/{CANONICAL}/contents/CMakeLists.txt" in contents.body["url"]
    assert cutlass.violations == []


async def test_writes_through_another_casing_land_in_the_repository(
    cutlass: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    head = cutlass.head(CANONICAL)
    await gh.post(
        "/repos/nvidia/CUTLASS/git/refs", data={"ref": f"refs/heads/{BRANCH}", "sha": head}
    )
    assert cutlass.head("nvidia/cutlass", BRANCH) == head
    cutlass.commit("Nvidia/Cutlass", {"a.txt": "1\n"}, "work", branch=BRANCH)
    pull = await gh.post(
        "/repos/nvidia/cutlass/pulls",
        data={"title": "t", "head": f"nvidia:{BRANCH}", "base": "main"},
    )
    assert pull["head"]["label"] == f"NVIDIA:{BRANCH}"
    listed = await gh.getitem(f"/repos/NVIDIA/cutlass/pulls?head=Nvidia:{BRANCH}")
    assert [p["number"] for p in listed] == [pull["number"]]
    await cutlass.flush()
    assert {d.repo for d in cutlass.deliveries} == {CANONICAL}
    assert cutlass.violations == []


async def test_installation_lookup_ignores_case(
    cutlass: GitHubSandbox, raw: RawApi, app_keys: tuple[str, str], clock: FakeClock
) -> None:
    bearer = f"Bearer {app_jwt(app_keys[0], clock.now)}"
    for spelling in SPELLINGS:
        got = await raw("GET", f"/repos/{spelling}/installation", auth=bearer)
        assert (got.status, got.body["id"]) == (200, INSTALLATION_ID)


async def test_collaborator_logins_ignore_case(cutlass: GitHubSandbox, raw: RawApi) -> None:
    cutlass.set_permission(CANONICAL, "Octocat", "write")
    got = await raw("GET", "/repos/nvidia/cutlass/collaborators/OCTOCAT/permission")
    assert (got.body["permission"], got.body["user"]["login"]) == ("write", "Octocat")
    owner = await raw("GET", "/repos/nvidia/cutlass/collaborators/nvidia/permission")
    assert (owner.body["permission"], owner.body["user"]["login"]) == ("admin", "NVIDIA")


async def test_graphql_repository_ignores_case(cutlass: GitHubSandbox, gh: GitHubAPI) -> None:
    client = SandboxGraphQL(gh, cutlass)
    for spelling in SPELLINGS:
        owner, name = spelling.split("/")
        found = await client.graphql(NAME_QUERY, owner=owner, name=name)
        assert found["repository"]["nameWithOwner"] == CANONICAL


def test_an_account_has_one_spelling(cutlass: GitHubSandbox) -> None:
    cutlass.create_repo("nvidia/nccl", files={"a": "b"})
    assert cutlass.repo("NVIDIA/NCCL").full_name == "NVIDIA/nccl"
    assert cutlass.repo("nvidia/nccl").owner is cutlass.repo(CANONICAL).owner
    with pytest.raises(ValueError, match="already exists"):
        cutlass.import_repository("nvidia/CUTLASS", cutlass.store.path(CANONICAL))


def _pygithub_names(base_url: str, token: str) -> list[tuple[str, str, str]]:
    client = pygithub(base_url, token)
    seen = []
    for spelling in SPELLINGS:
        repo = client.get_repo(spelling)
        # PyGithub follows the answer's own URLs from here on: they must lead back.
        pulls = repo.get_pulls(state="all")
        seen.append((repo.full_name, repo.owner.login, str(pulls.totalCount)))
    return seen


async def test_pygithub_reaches_the_repository_in_any_casing(
    cutlass: GitHubSandbox, token: str
) -> None:
    seen = await asyncio.to_thread(_pygithub_names, cutlass.base_url, token)
    assert seen == [(CANONICAL, "NVIDIA", "0")] * len(SPELLINGS)
    assert cutlass.violations == []
