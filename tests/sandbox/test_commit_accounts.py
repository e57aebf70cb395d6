"""A REST commit names the GitHub account behind its e-mail, or null, as GitHub does."""

from __future__ import annotations

from typing import Any

from gidgethub.aiohttp import GitHubAPI

from sandbox.github_json_base import NOREPLY_DOMAIN, account_for_email, noreply_email
from sandbox.github_server import GitHubSandbox
from sandbox.github_state import User

from .helpers import REPO, Receiver

ALICE = User("alice", 7)
USERS = {"alice": ALICE}


def test_the_numbered_noreply_address_links_its_account() -> None:
    assert noreply_email(ALICE) == f"7+alice@{NOREPLY_DOMAIN}"
    assert account_for_email(USERS, noreply_email(ALICE)) is ALICE


def test_the_pre_2017_noreply_address_links_by_login() -> None:
    assert account_for_email(USERS, f"alice@{NOREPLY_DOMAIN}") is ALICE
    assert account_for_email(USERS, f"alice@{NOREPLY_DOMAIN.upper()}") is ALICE


def test_other_addresses_link_nobody() -> None:
    assert account_for_email(USERS, f"8+alice@{NOREPLY_DOMAIN}") is None  # someone else's id
    assert account_for_email(USERS, f"7+bob@{NOREPLY_DOMAIN}") is None  # unknown login
    assert account_for_email(USERS, "alice@example.com") is None
    assert account_for_email(USERS, "alice") is None


async def _bot_commit(gh: GitHubAPI, parent: str) -> str:
    """A commit made through the Git Data API with the App's default identity."""
    base = await gh.getitem(f"/repos/{REPO}/git/commits/{parent}")
    commit = await gh.post(
        f"/repos/{REPO}/git/commits",
        data={"message": "bump", "tree": base["tree"]["sha"], "parents": [parent]},
    )
    sha: str = commit["sha"]
    await gh.post(f"/repos/{REPO}/git/refs", data={"ref": "refs/heads/bot", "sha": sha})
    return sha


def _accounts(commit: dict[str, Any]) -> tuple[str | None, str | None]:
    author, committer = commit["author"], commit["committer"]
    return (author and author["login"], committer and committer["login"])


async def test_an_unknown_email_gives_null_and_the_bots_commit_its_user(
    sandbox: GitHubSandbox, gh: GitHubAPI
) -> None:
    stranger = sandbox.head(REPO)  # the setup API's default author, ada@example.com
    bot_sha = await _bot_commit(gh, stranger)

    unknown = await gh.getitem(f"/repos/{REPO}/commits/{stranger}")
    assert unknown["author"] is None
    assert unknown["committer"] is None
    assert unknown["commit"]["author"]["email"] == "ada@example.com"

    own = await gh.getitem(f"/repos/{REPO}/commits/{bot_sha}")
    bot = sandbox.bot_user
    assert own["author"] == sandbox.json.user(bot)
    assert own["committer"] == sandbox.json.user(bot)
    assert (own["author"]["login"], own["author"]["type"]) == (bot.login, "Bot")
    assert sandbox.violations == []


async def test_list_and_compare_link_the_same_way(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    base = sandbox.head(REPO)
    alice = sandbox.user("alice")
    by_alice = sandbox.commit(
        REPO, {"a.txt": "a"}, "by alice", branch="topic", author=("Alice", noreply_email(alice))
    )
    by_stranger = sandbox.commit(REPO, {"b.txt": "b"}, "by a stranger", branch="topic")

    listed = await gh.getitem(f"/repos/{REPO}/commits?sha=topic")
    assert [(c["sha"], _accounts(c)) for c in listed] == [
        (by_stranger, (None, None)),
        (by_alice, ("alice", "alice")),
        (base, (None, None)),
    ]
    compared = await gh.getitem(f"/repos/{REPO}/compare/{base}...topic")
    assert [(c["sha"], _accounts(c)) for c in compared["commits"]] == [
        (by_alice, ("alice", "alice")),
        (by_stranger, (None, None)),
    ]
    assert _accounts(compared["base_commit"]) == (None, None)
    branch = await gh.getitem(f"/repos/{REPO}/branches/topic")
    assert _accounts(branch["commit"]) == (None, None)
    assert sandbox.violations == []


async def test_push_webhooks_name_linked_accounts_and_stay_valid(
    sandbox: GitHubSandbox, receiver: Receiver
) -> None:
    alice = sandbox.user("alice")
    await sandbox.push_commit(REPO, {"a.txt": "a"}, "by alice", author=("A", noreply_email(alice)))
    await sandbox.push_commit(REPO, {"b.txt": "b"}, "by a stranger")

    pushes = [r.payload for r in receiver.received if r.headers["X-GitHub-Event"] == "push"]
    linked, unlinked = (push["head_commit"] for push in pushes)
    assert linked["author"] == {"name": "A", "email": noreply_email(alice), "username": "alice"}
    assert linked["committer"]["username"] == "alice"
    assert unlinked["author"] == {"name": "Ada Lovelace", "email": "ada@example.com"}
    assert "username" not in unlinked["committer"]
    # Every delivery is checked against its webhook schema; a mismatch lands here.
    assert sandbox.violations == []
