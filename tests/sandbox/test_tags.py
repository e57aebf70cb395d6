"""Tags on the stand-in: real git tags (lightweight and annotated, on any object), the
webhooks a pushed, moved or deleted tag sends, and what the REST routes answer."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from typing import Any

import pytest
from gidgethub.aiohttp import GitHubAPI

from sandbox.git_objects import ZERO_SHA, Identity
from sandbox.github_server import GitHubSandbox

from .helpers import REPO, RawApi, Receiver

WHEN = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def git(sandbox: GitHubSandbox, *args: str) -> str:
    path = sandbox.store.path(REPO)
    done = subprocess.run(["git", "--git-dir", str(path), *args], capture_output=True, check=True)
    return done.stdout.decode().strip()


def payloads(receiver: Receiver, event: str) -> list[dict[str, Any]]:
    return [r.payload for r in receiver.received if r.headers["X-GitHub-Event"] == event]


def dangling_commit(sandbox: GitHubSandbox, parent: str) -> str:
    """A commit no branch has (as one pushed with its tag only)."""
    tree = sandbox.store.write_files(REPO, sandbox.store.read_commit(REPO, parent).tree, {"b": "1"})
    who = Identity("Ada Lovelace", "ada@example.com", int(WHEN.timestamp()))
    return sandbox.store.commit_tree(REPO, tree, [parent], "only tagged", who, who)


async def test_a_lightweight_tag_is_a_ref_to_the_commit(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    head = sandbox.head(REPO)
    assert sandbox.create_tag(REPO, "v1.0", head) == head
    await sandbox.flush()

    ref = await gh.getitem(f"/repos/{REPO}/git/ref/tags/v1.0")
    assert (ref["ref"], ref["object"]["type"], ref["object"]["sha"]) == (
        "refs/tags/v1.0",
        "commit",
        head,
    )
    [tag] = await gh.getitem(f"/repos/{REPO}/tags")
    assert (tag["name"], tag["commit"]["sha"]) == ("v1.0", head)
    assert tag["zipball_url"].endswith(f"/repos/{REPO}/zipball/refs/tags/v1.0")
    assert tag["node_id"] == ref["node_id"]

    assert receiver.events() == [("create", None), ("push", None)]
    [created] = payloads(receiver, "create")
    assert {k: created[k] for k in ("ref", "ref_type", "master_branch", "pusher_type")} == {
        "ref": "v1.0",
        "ref_type": "tag",
        "master_branch": "main",
        "pusher_type": "user",
    }
    assert created["description"] is None
    assert created["sender"]["login"] == "acme"
    [pushed] = payloads(receiver, "push")
    assert (pushed["ref"], pushed["before"], pushed["after"]) == ("refs/tags/v1.0", ZERO_SHA, head)
    assert (pushed["created"], pushed["deleted"], pushed["forced"]) == (True, False, False)
    assert pushed["base_ref"] is None
    # Like GitHub's recorded tag push: no commit listed, the tagged one as head_commit.
    assert pushed["commits"] == []
    assert pushed["head_commit"]["id"] == head
    assert pushed["compare"].endswith(f"/{REPO}/compare/v1.0")
    assert [d.status for d in sandbox.deliveries] == [202, 202]
    assert sandbox.violations == []


async def test_an_annotated_tag_is_a_tag_object(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    head = sandbox.head(REPO)
    tag_sha = sandbox.create_tag(
        REPO,
        "v2.0",
        head,
        annotated=True,
        message="Release 2.0",
        tagger=("Grace Hopper", "grace@example.com"),
        when=WHEN,
    )
    await sandbox.flush()
    assert tag_sha != head
    assert git(sandbox, "cat-file", "-t", tag_sha) == "tag"
    assert git(sandbox, "rev-parse", "v2.0^{commit}") == head

    ref = await gh.getitem(f"/repos/{REPO}/git/ref/tags/v2.0")
    assert (ref["object"]["type"], ref["object"]["sha"]) == ("tag", tag_sha)
    assert ref["object"]["url"].endswith(f"/repos/{REPO}/git/tags/{tag_sha}")
    tag = await gh.getitem(ref["object"]["url"])
    assert (tag["tag"], tag["sha"], tag["message"]) == ("v2.0", tag_sha, "Release 2.0\n")
    assert tag["tagger"] == {
        "name": "Grace Hopper",
        "email": "grace@example.com",
        "date": "2024-05-01T12:00:00Z",
    }
    assert (tag["object"]["type"], tag["object"]["sha"]) == ("commit", head)
    assert tag["verification"]["verified"] is False
    [listed] = await gh.getitem(f"/repos/{REPO}/tags")
    assert listed["commit"]["sha"] == head  # peeled, not the tag object

    [pushed] = payloads(receiver, "push")
    assert pushed["after"] == tag_sha
    assert pushed["head_commit"]["id"] == head
    assert sandbox.tags(REPO) == {"v2.0": tag_sha}
    assert sandbox.violations == []


async def test_get_tag_finds_only_tag_objects(sandbox: GitHubSandbox, raw: RawApi) -> None:
    head = sandbox.head(REPO)
    assert (await raw("GET", f"/repos/{REPO}/git/tags/{head}")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/git/tags/{'e' * 40}")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/git/ref/tags/nope")).status == 404
    assert sandbox.violations == []


async def test_a_tag_off_the_default_branch(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    main = sandbox.head(REPO)
    topic = sandbox.commit(REPO, {"t": "1"}, "topic work", branch="topic")
    lonely = dangling_commit(sandbox, main)
    sandbox.create_tag(REPO, "on-topic", topic)
    sandbox.create_tag(REPO, "lonely", lonely, annotated=True, message="only here")
    await sandbox.flush()

    on_topic, on_lonely = payloads(receiver, "push")[1:]
    # A commit some branch has is not new; one only the tag brings is listed.
    assert (on_topic["commits"], on_topic["head_commit"]["id"]) == ([], topic)
    assert [c["id"] for c in on_lonely["commits"]] == [lonely]
    assert on_lonely["head_commit"]["id"] == lonely
    assert on_lonely["head_commit"]["added"] == ["b"]

    compared = await gh.getitem(f"/repos/{REPO}/compare/main...lonely")
    assert (compared["status"], compared["ahead_by"]) == ("ahead", 1)
    assert [c["sha"] for c in compared["commits"]] == [lonely]
    listed = await gh.getitem(f"/repos/{REPO}/commits?sha=lonely")
    assert [c["sha"] for c in listed] == [lonely, main]
    assert (await gh.getitem(f"/repos/{REPO}/commits/on-topic"))["sha"] == topic
    assert sandbox.violations == []


async def test_a_tag_on_a_tree_or_a_blob(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi, receiver: Receiver
) -> None:
    head = sandbox.head(REPO)
    tree = sandbox.store.read_commit(REPO, head).tree
    blob = sandbox.store.hash_blob(REPO, b"just bytes\n")
    sandbox.create_tag(REPO, "a-tree", tree)
    blob_tag = sandbox.create_tag(REPO, "a-blob", blob, annotated=True, message="a blob")
    await sandbox.flush()

    ref = await gh.getitem(f"/repos/{REPO}/git/ref/tags/a-tree")
    assert (ref["object"]["type"], ref["object"]["sha"]) == ("tree", tree)
    assert ref["object"]["url"].endswith(f"/git/trees/{tree}")
    tag = await gh.getitem(f"/repos/{REPO}/git/tags/{blob_tag}")
    assert (tag["object"]["type"], tag["object"]["sha"]) == ("blob", blob)
    # No commit to name: the tags list leaves them out, commit routes find nothing.
    assert await gh.getitem(f"/repos/{REPO}/tags") == []
    assert (await raw("GET", f"/repos/{REPO}/compare/main...a-tree")).status == 404
    assert (await raw("GET", f"/repos/{REPO}/commits?sha=a-blob")).status == 404

    for pushed in payloads(receiver, "push"):
        assert (pushed["created"], pushed["commits"], pushed["head_commit"]) == (True, [], None)
    assert sandbox.violations == []


async def test_moving_a_tag_forward_or_aside(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    first = sandbox.head(REPO)
    sandbox.create_tag(REPO, "stable", first)
    second = sandbox.commit(REPO, {"a": "2"}, "second")
    aside = dangling_commit(sandbox, first)
    assert sandbox.move_tag(REPO, "stable", second) == second
    assert sandbox.move_tag(REPO, "stable", aside) == aside
    await sandbox.flush()

    # create + push of the tag, the push of "second" to main, then the two moves.
    assert receiver.events() == [("create", None)] + [("push", None)] * 4
    forward, sideways = payloads(receiver, "push")[2:]
    # GitHub only sees the old and new values: a fast-forward is no forced push.
    assert (forward["before"], forward["after"], forward["forced"]) == (first, second, False)
    assert (forward["created"], forward["deleted"], forward["commits"]) == (False, False, [])
    assert forward["compare"].endswith(f"/compare/{first[:12]}...{second[:12]}")
    assert (sideways["before"], sideways["after"], sideways["forced"]) == (second, aside, True)
    assert [c["id"] for c in sideways["commits"]] == [aside]

    ref = await gh.getitem(f"/repos/{REPO}/git/ref/tags/stable")
    assert ref["object"]["sha"] == aside
    compared = await gh.getitem(f"/repos/{REPO}/compare/stable...main")
    assert (compared["status"], compared["ahead_by"], compared["behind_by"]) == ("diverged", 1, 1)
    assert sandbox.violations == []


async def test_re_tagging_an_annotated_tag(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    first = sandbox.head(REPO)
    old = sandbox.create_tag(REPO, "v3", first, annotated=True, message="three")
    second = sandbox.commit(REPO, {"a": "2"}, "second")
    new = sandbox.move_tag(REPO, "v3", second, annotated=True, message="three, again")
    assert new not in (old, second)
    tag = await gh.getitem(f"/repos/{REPO}/git/tags/{new}")
    assert (tag["object"]["sha"], tag["message"]) == (second, "three, again\n")
    [listed] = await gh.getitem(f"/repos/{REPO}/tags")
    assert listed["commit"]["sha"] == second
    assert sandbox.violations == []


async def test_deleting_a_tag(
    sandbox: GitHubSandbox, gh: GitHubAPI, raw: RawApi, receiver: Receiver
) -> None:
    head = sandbox.head(REPO)
    tag_sha = sandbox.create_tag(REPO, "gone", head, annotated=True, message="soon gone")
    sandbox.delete_tag(REPO, "gone", pushed_by="maint")
    await sandbox.flush()

    assert receiver.events() == [("create", None), ("push", None), ("delete", None), ("push", None)]
    [deleted] = payloads(receiver, "delete")
    assert (deleted["ref"], deleted["ref_type"], deleted["pusher_type"]) == ("gone", "tag", "user")
    assert deleted["sender"]["login"] == "maint"
    pushed = payloads(receiver, "push")[-1]
    assert (pushed["before"], pushed["after"]) == (tag_sha, ZERO_SHA)
    assert (pushed["created"], pushed["deleted"], pushed["forced"]) == (False, True, False)
    assert (pushed["commits"], pushed["head_commit"]) == ([], None)
    assert pushed["compare"].endswith(f"/compare/{tag_sha[:12]}...000000000000")

    assert (await raw("GET", f"/repos/{REPO}/git/ref/tags/gone")).status == 404
    assert await gh.getitem(f"/repos/{REPO}/git/matching-refs/tags/gone") == []
    assert await gh.getitem(f"/repos/{REPO}/tags") == []
    assert (await raw("GET", f"/repos/{REPO}/compare/gone...main")).status == 404
    # The tag object itself stays readable by sha, as git keeps it until gc.
    assert (await gh.getitem(f"/repos/{REPO}/git/tags/{tag_sha}"))["tag"] == "gone"
    assert sandbox.violations == []


async def test_matching_refs_is_a_plain_prefix(sandbox: GitHubSandbox, gh: GitHubAPI) -> None:
    head = sandbox.head(REPO)
    sandbox.commit(REPO, {"t": "1"}, "topic", branch="topic")
    sandbox.create_tag(REPO, "v1", head)
    annotated = sandbox.create_tag(REPO, "v1.1", head, annotated=True, message="x")
    sandbox.create_tag(REPO, "v2", head)

    found = await gh.getitem(f"/repos/{REPO}/git/matching-refs/tags/v1")
    assert [(r["ref"], r["object"]["type"]) for r in found] == [
        ("refs/tags/v1", "commit"),
        ("refs/tags/v1.1", "tag"),
    ]
    assert found[1]["object"]["sha"] == annotated
    heads = await gh.getitem(f"/repos/{REPO}/git/matching-refs/heads/")
    assert [r["ref"] for r in heads] == ["refs/heads/main", "refs/heads/topic"]
    tags = await gh.getitem(f"/repos/{REPO}/git/matching-refs/refs/tags")
    assert len(tags) == 3
    assert await gh.getitem(f"/repos/{REPO}/git/matching-refs/tags/v9") == []
    assert sandbox.violations == []


async def test_tags_are_listed_by_name_in_reverse_and_paged(
    sandbox: GitHubSandbox, raw: RawApi
) -> None:
    head = sandbox.head(REPO)
    for name in ("v1.9", "alpha", "v2.0", "v1.10"):
        sandbox.create_tag(REPO, name, head)
    first = await raw("GET", f"/repos/{REPO}/tags?per_page=3")
    assert [t["name"] for t in first.body] == ["v2.0", "v1.9", "v1.10"]
    assert 'rel="next"' in first.headers["Link"]
    assert "page=2" in first.headers["Link"]
    second = await raw("GET", f"/repos/{REPO}/tags?per_page=3&page=2")
    assert [t["name"] for t in second.body] == ["alpha"]
    assert 'rel="prev"' in second.headers["Link"]
    assert sandbox.violations == []


async def test_tags_made_over_the_api_send_create_and_delete(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    head = sandbox.head(REPO)
    await gh.post(f"/repos/{REPO}/git/refs", data={"ref": "refs/tags/by-bot", "sha": head})
    await gh.delete(f"/repos/{REPO}/git/refs/tags/by-bot")
    await sandbox.flush()
    assert receiver.events() == [("create", None), ("push", None), ("delete", None), ("push", None)]
    assert {p["sender"]["login"] for p in payloads(receiver, "create")} == {"followup-bot[bot]"}
    assert sandbox.violations == []


def test_refusals(sandbox: GitHubSandbox) -> None:
    head = sandbox.head(REPO)
    sandbox.create_tag(REPO, "v1", head)
    with pytest.raises(ValueError, match="already exists"):
        sandbox.create_tag(REPO, "v1", head)
    with pytest.raises(ValueError, match="not a valid tag name"):
        sandbox.create_tag(REPO, "bad..name", head)
    with pytest.raises(ValueError, match="no object"):
        sandbox.create_tag(REPO, "v2", "f" * 40)
    with pytest.raises(ValueError, match="no tag"):
        sandbox.move_tag(REPO, "v9", head)
    with pytest.raises(ValueError, match="no tag"):
        sandbox.delete_tag(REPO, "v9")
