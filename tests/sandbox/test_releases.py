"""Releases on the stand-in: drafts, pre-releases, the latest release, lookups by tag and
id, and the ``release`` webhooks GitHub sends for each step."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.github_server import GitHubSandbox

from .helpers import INSTALLATION_ID, REPO, FakeClock, RawApi, Receiver, pygithub


def release_events(receiver: Receiver) -> list[tuple[str, str | None]]:
    return [event for event in receiver.events() if event[0] == "release"]


async def test_a_release_on_a_tag(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    sandbox.create_tag(REPO, "v1.0", sandbox.head(REPO))
    made = sandbox.create_release(REPO, "v1.0", name="One", body="Notes", author="maint")
    await sandbox.flush()

    by_tag = await gh.getitem(f"/repos/{REPO}/releases/tags/v1.0")
    assert by_tag == made
    assert by_tag["html_url"].endswith(f"/{REPO}/releases/tag/v1.0")
    assert by_tag["url"].endswith(f"/repos/{REPO}/releases/{made['id']}")
    assert by_tag["tarball_url"].endswith(f"/repos/{REPO}/tarball/v1.0")
    assert (by_tag["tag_name"], by_tag["name"], by_tag["body"]) == ("v1.0", "One", "Notes")
    assert (by_tag["draft"], by_tag["prerelease"], by_tag["immutable"]) == (False, False, False)
    assert by_tag["target_commitish"] == "main"
    assert by_tag["published_at"] == by_tag["created_at"]
    assert (by_tag["author"]["login"], by_tag["assets"]) == ("maint", [])
    assert await gh.getitem(f"/repos/{REPO}/releases/latest") == made
    assert await gh.getitem(by_tag["url"]) == made
    assert await gh.getitem(f"/repos/{REPO}/releases") == [made]

    assert release_events(receiver) == [
        ("release", "created"),
        ("release", "published"),
        ("release", "released"),
    ]
    for delivered in receiver.received[-3:]:
        payload = delivered.payload
        assert payload["release"]["id"] == made["id"]
        assert payload["release"]["tag_name"] == "v1.0"
        assert payload["release"]["author"]["login"] == "maint"
        assert payload["sender"]["login"] == "maint"
        assert payload["repository"]["full_name"] == REPO
    assert [d.status for d in sandbox.deliveries] == [202] * len(receiver.received)
    assert sandbox.violations == []


async def test_the_latest_release_is_neither_draft_nor_pre_release(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi, clock: FakeClock
) -> None:
    assert (await raw("GET", f"/repos/{REPO}/releases/latest")).status == 404
    assert await gh.getitem(f"/repos/{REPO}/releases") == []
    head = sandbox.head(REPO)
    for name in ("v1", "v2-rc1", "v2", "v3"):
        sandbox.create_tag(REPO, name, head)
    stable = sandbox.create_release(REPO, "v1")
    clock.now += 60
    pre = sandbox.create_release(REPO, "v2-rc1", prerelease=True)
    clock.now += 60
    draft = sandbox.create_release(REPO, "v2", draft=True)
    clock.now += 60
    also_draft = sandbox.create_release(REPO, "v3", draft=True, prerelease=True)

    assert (await gh.getitem(f"/repos/{REPO}/releases/latest"))["id"] == stable["id"]
    listed = await gh.getitem(f"/repos/{REPO}/releases")
    assert [r["id"] for r in listed] == [also_draft["id"], draft["id"], pre["id"], stable["id"]]
    assert draft["published_at"] is None
    assert (draft["tarball_url"], draft["zipball_url"]) == (None, None)
    assert "/releases/tag/untagged-" in draft["html_url"]
    # A draft is not found by its tag, though push access finds it by id.
    assert (await raw("GET", f"/repos/{REPO}/releases/tags/v2")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/releases/tags/v9")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/releases/987654")).status == 404
    assert (await gh.getitem(f"/repos/{REPO}/releases/{draft['id']}"))["draft"] is True
    assert (await gh.getitem(f"/repos/{REPO}/releases/tags/v2-rc1"))["prerelease"] is True

    paged = await raw("GET", f"/repos/{REPO}/releases?per_page=3")
    assert len(paged.body) == 3
    assert 'rel="next"' in paged.headers["Link"]
    assert sandbox.violations == []


async def test_publishing_a_draft(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver, clock: FakeClock
) -> None:
    sandbox.create_tag(REPO, "v2.0-beta", sandbox.head(REPO))
    draft = sandbox.create_release(REPO, "v2.0-beta", draft=True, prerelease=True)
    await sandbox.flush()
    assert release_events(receiver) == [("release", "created")]

    clock.now += 120  # the installation token lives an hour
    published = sandbox.publish_release(REPO, draft["id"], by="maint")
    await sandbox.flush()
    assert release_events(receiver) == [
        ("release", "created"),
        ("release", "published"),
        ("release", "prereleased"),
    ]
    assert published["draft"] is False
    assert published["created_at"] == draft["created_at"]
    assert published["published_at"] > published["created_at"]
    assert published["html_url"].endswith("/releases/tag/v2.0-beta")
    assert receiver.received[-1].payload["sender"]["login"] == "maint"
    assert receiver.received[-1].payload["release"]["prerelease"] is True
    assert await gh.getitem(f"/repos/{REPO}/releases/tags/v2.0-beta") == published
    with pytest.raises(ValueError, match="not a draft"):
        sandbox.publish_release(REPO, draft["id"])
    assert sandbox.violations == []


async def test_deleting_its_tag_turns_a_release_into_a_draft(
    sandbox: GitHubSandbox, raw: RawApi
) -> None:
    sandbox.create_tag(REPO, "v1", sandbox.head(REPO))
    release = sandbox.create_release(REPO, "v1")
    sandbox.delete_tag(REPO, "v1")
    assert (await raw("GET", f"/repos/{REPO}/releases/tags/v1")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/releases/latest")).status == 404
    [kept] = (await raw("GET", f"/repos/{REPO}/releases")).body
    assert (kept["id"], kept["draft"], kept["published_at"]) == (release["id"], True, None)
    with pytest.raises(ValueError, match="no tag"):
        sandbox.publish_release(REPO, release["id"])
    assert sandbox.violations == []


async def test_drafts_are_hidden_without_push_access(sandbox: GitHubSandbox, raw: RawApi) -> None:
    other = "elsewhere/public"
    sandbox.create_repo(other, files={"a": "b"}, installation_id=INSTALLATION_ID + 1)
    sandbox.create_tag(other, "v1", sandbox.head(other))
    sandbox.create_tag(other, "v2", sandbox.head(other))
    shown = sandbox.create_release(other, "v1")
    hidden = sandbox.create_release(other, "v2", draft=True)
    assert [r["id"] for r in sandbox.releases(other)] == [hidden["id"], shown["id"]]
    # This token's installation is not on the repository: it reads it as the public does.
    listed = (await raw("GET", f"/repos/{other}/releases")).body
    assert [r["id"] for r in listed] == [shown["id"]]
    assert (await raw("GET", f"/repos/{other}/releases/{hidden['id']}")).status == 404
    assert sandbox.violations == []


def test_refusals(sandbox: GitHubSandbox) -> None:
    with pytest.raises(ValueError, match="no tag"):
        sandbox.create_release(REPO, "v0")
    sandbox.create_tag(REPO, "v1", sandbox.head(REPO))
    sandbox.create_release(REPO, "v1")
    with pytest.raises(ValueError, match="already exists"):
        sandbox.create_release(REPO, "v1", name="again")
    with pytest.raises(ValueError, match="not a draft"):
        sandbox.publish_release(REPO, 1)


def drive(base_url: str, token: str) -> dict[str, Any]:
    """PyGithub reads tags and releases; its requests must all fit the contract."""
    client = pygithub(base_url, token)
    repo = client.get_repo(REPO)
    annotated = repo.get_git_ref("tags/v1.0")
    tag = repo.get_git_tag(annotated.object.sha)
    return {
        "tags": [(t.name, t.commit.sha) for t in repo.get_tags()],
        "matching": [r.ref for r in repo.get_git_matching_refs("tags/")],
        "tag_message": tag.message,
        "tag_object": tag.object.sha,
        "latest": repo.get_latest_release().tag_name,
        "by_tag": repo.get_release("v1.0").name,
        "releases": [r.tag_name for r in repo.get_releases()],
    }


async def test_pygithub_reads_tags_and_releases(
    sandbox: GitHubSandbox, token: str, clock: FakeClock
) -> None:
    head = sandbox.head(REPO)
    sandbox.create_tag(REPO, "v1.0", head, annotated=True, message="First")
    sandbox.create_tag(REPO, "v1.1-rc", head)
    sandbox.create_release(REPO, "v1.0", name="First")
    clock.now += 60
    sandbox.create_release(REPO, "v1.1-rc", prerelease=True)
    seen = await asyncio.to_thread(drive, sandbox.base_url, token)
    assert seen["tags"] == [("v1.1-rc", head), ("v1.0", head)]
    assert seen["matching"] == ["refs/tags/v1.0", "refs/tags/v1.1-rc"]
    assert (seen["tag_message"], seen["tag_object"]) == ("First\n", head)
    assert (seen["latest"], seen["by_tag"]) == ("v1.0", "First")
    assert seen["releases"] == ["v1.1-rc", "v1.0"]
    operations = {r.operation_id for r in sandbox.requests}
    assert {
        "repos/list-tags",
        "git/list-matching-refs",
        "git/get-tag",
        "repos/get-latest-release",
        "repos/get-release-by-tag",
        "repos/list-releases",
    } <= operations
    assert sandbox.violations == []
