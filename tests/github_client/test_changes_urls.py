"""Paths and branch names reach GitHub's URLs escaped: a '?', '#' or '%' in them is data,
never a query, a fragment or an escape, and '..' never folds into another endpoint."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import gidgethub.abc
import pytest
from gidgethub.abc import GitHubAPI

from bot.core.errors import PermanentError
from bot.github import changes
from bot.github.changes import Repo, url_path
from sandbox.harness import Harness, harness

REPO = Repo("acme", "widgets")
INSTALLATION_ID = 41
API = "https://api.github.com/repos/acme/widgets"


class RecordingGitHub(gidgethub.abc.GitHubAPI):
    """Records each URL gidgethub built and answers with one canned JSON body."""

    def __init__(self, body: Any) -> None:
        super().__init__("followup-bot-tests")
        self.body = body
        self.urls: list[str] = []

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        self.urls.append(f"{method} {url}")
        return 200, {"content-type": "application/json"}, json.dumps(self.body).encode()

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("no sleeping in unit tests")


FILE_BODY = {"type": "file", "encoding": "base64", "content": "aGk="}
REF_BODY = {"object": {"sha": "a" * 40}}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("cmake/fa.cmake", "cmake/fa.cmake"),
        ("a?ref=evil", "a%3Fref%3Devil"),
        ("a#frag", "a%23frag"),
        ("%2e%2e/x", "%252e%252e/x"),
        ("a&b=c", "a%26b%3Dc"),
        ("a b/c\td", "a%20b/c%09d"),
        ("x+y@z/~q", "x%2By%40z/~q"),
        ("\u00e9/\u2215", "%C3%A9/%E2%88%95"),
        ("a\\..\\b", "a%5C..%5Cb"),
        (".github/...", ".github/..."),
    ],
)
def test_each_name_is_encoded_on_its_own(path: str, expected: str) -> None:
    assert url_path(path) == expected


@pytest.mark.parametrize("path", ["", "/abs", "a//b", "a/", "a/./b", ".", "../x", "a/.."])
def test_names_a_client_would_fold_away_are_refused(path: str) -> None:
    with pytest.raises(PermanentError) as caught:
        url_path(path)
    assert str(caught.value) == changes.ERROR_NOT_A_PATH.format(path=path)


async def test_read_file_asks_for_the_odd_path_and_the_ref_it_was_given() -> None:
    gh = RecordingGitHub(FILE_BODY)
    path = "cmake/x.cmake?ref=evil#frag%2e%2e/a b&c"
    assert await changes.read_file(gh, REPO, path, "feature/x#1") == b"hi"
    assert gh.urls == [
        f"GET {API}/contents/cmake/x.cmake%3Fref%3Devil%23frag%252e%252e/a%20b%26c"
        "?ref=feature%2Fx%231"
    ]


async def test_read_file_without_a_ref_has_no_query() -> None:
    gh = RecordingGitHub(FILE_BODY)
    assert await changes.read_file(gh, REPO, ".github/followup-bot.yml", None) == b"hi"
    assert gh.urls == [f"GET {API}/contents/.github/followup-bot.yml"]


async def test_read_file_refuses_a_path_that_would_leave_the_contents_api() -> None:
    gh = RecordingGitHub(FILE_BODY)
    with pytest.raises(PermanentError):
        await changes.read_file(gh, REPO, "../../pulls", None)
    assert gh.urls == []


async def test_branch_refs_keep_their_slashes_and_escape_the_rest() -> None:
    gh = RecordingGitHub(REF_BODY)
    assert await changes.ref_sha(gh, REPO, "followup-bot/bump/fa") == "a" * 40
    assert await changes.ref_sha(gh, REPO, "rel#2/50%?x") == "a" * 40
    await changes.advance_branch(gh, REPO, "rel#2/50%?x", "b" * 40)
    await changes.force_branch(gh, REPO, "rel#2/50%?x", "b" * 40, exists=True)
    assert gh.urls == [
        f"GET {API}/git/ref/heads/followup-bot/bump/fa",
        f"GET {API}/git/ref/heads/rel%232/50%25%3Fx",
        f"PATCH {API}/git/refs/heads/rel%232/50%25%3Fx",
        f"PATCH {API}/git/refs/heads/rel%232/50%25%3Fx",
    ]


async def test_branch_head_escapes_the_branch_name() -> None:
    gh = RecordingGitHub({"commit": {"sha": "c" * 40, "commit": {"tree": {"sha": "d" * 40}}}})
    head = await changes.branch_head(gh, REPO, "release/v2#hot")
    assert (head.name, head.sha, head.tree) == ("release/v2#hot", "c" * 40, "d" * 40)
    assert gh.urls == [f"GET {API}/branches/release/v2%23hot"]


# --- through the bot's real client (aiohttp) to the GitHub stand-in ------------------------

ODD_FILE = "odd dir/x?ref=main#L1 %41&b.cmake"
LEGAL_FILE = "cmake/a+b@c/-d.cmake"
ODD_BRANCH = "rel#2/50%"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Harness]:
    async with harness(tmp_path, repositories=(REPO.full_name,)) as h:
        h.sandbox.create_repo(
            REPO.full_name,
            files={ODD_FILE: "odd\n", LEGAL_FILE: "legal\n", "x.cmake": "decoy\n"},
            installation_id=INSTALLATION_ID,
        )
        await h.settle()  # the bot's own reaction to the new repository is not ours to check
        yield h


@pytest.fixture
async def bot_client(env: Harness) -> GitHubAPI:
    return await env.running.services.github.repo_client(REPO.full_name)


def paths_requested(env: Harness) -> list[str]:
    return [f"{r.method} {r.path}" for r in env.sandbox.requests if "/access_tokens" not in r.path]


async def test_the_stand_in_gets_each_path_escaped(env: Harness, bot_client: GitHubAPI) -> None:
    env.sandbox.requests.clear()
    assert await changes.read_file(bot_client, REPO, ODD_FILE, None) == b"odd\n"
    assert await changes.read_file(bot_client, REPO, LEGAL_FILE, "main") == b"legal\n"
    # What arrives on the wire: aiohttp may spell '&', '@' and '+' plainly (they carry no
    # meaning in a path), but '?', '#', '%' and the space stay escaped.
    assert paths_requested(env) == [
        "GET /repos/acme/widgets/contents/odd%20dir/x%3Fref=main%23L1%20%2541&b.cmake",
        "GET /repos/acme/widgets/contents/cmake/a%2Bb@c/-d.cmake",
    ]
    assert env.sandbox.requests[-1].query == {"ref": "main"}
    assert env.sandbox.violations == []


async def test_the_stand_in_gets_each_branch_escaped(env: Harness, bot_client: GitHubAPI) -> None:
    main = env.sandbox.head(REPO.full_name)
    await changes.force_branch(bot_client, REPO, ODD_BRANCH, main, exists=False)
    env.sandbox.requests.clear()
    assert await changes.ref_sha(bot_client, REPO, ODD_BRANCH) == main
    head = await changes.branch_head(bot_client, REPO, ODD_BRANCH)
    assert head.sha == main
    assert env.sandbox.head(REPO.full_name, ODD_BRANCH) == main
    assert paths_requested(env) == [
        "GET /repos/acme/widgets/git/ref/heads/rel%232/50%25",
        "GET /repos/acme/widgets/branches/rel%232/50%25",
    ]
    assert env.sandbox.violations == []
