"""The commits a ``push`` webhook lists: up to GitHub's 2048, oldest first, each with its
``distinct`` flag, and the webhook's keys only (no Events API ``size``)."""

from __future__ import annotations

from typing import Any

from gidgethub.aiohttp import GitHubAPI

from sandbox.github_push_commits import PUSH_COMMITS_CAP
from sandbox.github_server import GitHubSandbox

from .helpers import REPO, Receiver
from .test_tags import dangling_commit

SCRATCH = "refs/scratch/history"  # not a branch or a tag: pushes never look at it
START = 1_700_000_000


def payloads(receiver: Receiver) -> list[dict[str, Any]]:
    return [r.payload for r in receiver.received if r.headers["X-GitHub-Event"] == "push"]


def history(sandbox: GitHubSandbox, count: int) -> list[str]:
    """``count`` commits on top of main, one ``git fast-import`` for all of them (one
    setup commit per developer push would take minutes), oldest first."""
    stream = bytearray()
    for n in range(1, count + 1):
        data = f"{n}\n".encode()
        stream += f"commit {SCRATCH}\nmark :{n}\n".encode()
        stream += f"committer Ada <ada@example.com> {START + n} +0000\n".encode()
        stream += f"data {len(f'step {n}')}\nstep {n}\n".encode()
        if n == 1:
            stream += f"from {sandbox.head(REPO)}\n".encode()
        stream += f"M 100644 inline counter.txt\ndata {len(data)}\n".encode() + data + b"\n"
    path = sandbox.store.path(REPO)
    sandbox.store.run(path, "fast-import", "--quiet", stdin=bytes(stream))
    tip = sandbox.store.get_ref(REPO, SCRATCH)
    assert tip is not None
    return sandbox.store.rev_list(REPO, tip, f"^{sandbox.head(REPO)}", reverse=True)


async def test_every_commit_of_a_push_is_listed_oldest_first(
    sandbox: GitHubSandbox, receiver: Receiver
) -> None:
    shas = history(sandbox, 25)  # more than the Events API's 20
    sandbox.set_ref(REPO, "main", shas[-1])
    await sandbox.flush()

    [pushed] = payloads(receiver)
    assert [c["id"] for c in pushed["commits"]] == shas
    assert pushed["head_commit"] == pushed["commits"][-1]
    assert (pushed["commits"][0]["added"], pushed["commits"][1]["modified"]) == (
        ["counter.txt"],
        ["counter.txt"],
    )
    assert all(c["distinct"] for c in pushed["commits"])
    # The Events API's counts are no part of the webhook.
    assert not {"size", "distinct_size"} & pushed.keys()
    assert sandbox.violations == []


async def test_a_longer_push_lists_the_first_2048(
    sandbox: GitHubSandbox, receiver: Receiver
) -> None:
    shas = history(sandbox, PUSH_COMMITS_CAP + 2)
    sandbox.set_ref(REPO, "main", shas[-1])
    await sandbox.flush()

    [pushed] = payloads(receiver)
    assert len(pushed["commits"]) == PUSH_COMMITS_CAP == 2048
    assert [c["id"] for c in pushed["commits"]] == shas[:PUSH_COMMITS_CAP]
    # The head is the ref's new commit, listed or not.
    assert pushed["head_commit"]["id"] == shas[-1]
    assert pushed["head_commit"]["message"] == f"step {PUSH_COMMITS_CAP + 2}"
    assert sandbox.violations == []


async def test_commits_another_branch_had_are_not_distinct(
    sandbox: GitHubSandbox, gh: GitHubAPI, receiver: Receiver
) -> None:
    main = sandbox.head(REPO)
    first = sandbox.commit(REPO, {"a.txt": "1"}, "one", branch="topic")
    second = sandbox.commit(REPO, {"a.txt": "2"}, "two", branch="topic")
    # A new branch from the topic brings nothing new; its own next commit is new.
    await gh.post(f"/repos/{REPO}/git/refs", data={"ref": "refs/heads/copy", "sha": second})
    own = sandbox.commit(REPO, {"b.txt": "1"}, "own", branch="copy")
    pull = await gh.post(
        f"/repos/{REPO}/pulls", data={"title": "t", "head": "topic", "base": "main"}
    )
    merged = await gh.put(
        f"/repos/{REPO}/pulls/{pull['number']}/merge", data={"merge_method": "merge"}
    )
    await sandbox.flush()

    topic_made, _, copy_made, copy_own, to_main = payloads(receiver)
    assert [(c["id"], c["distinct"]) for c in topic_made["commits"]] == [(first, True)]
    assert [(c["id"], c["distinct"]) for c in copy_made["commits"]] == [
        (first, False),
        (second, False),
    ]
    assert copy_made["head_commit"]["distinct"] is False
    assert [(c["id"], c["distinct"]) for c in copy_own["commits"]] == [(own, True)]
    # The merge lists the pull's commits, which the topic branch had, and its own.
    assert to_main["before"] == main
    assert [(c["id"], c["distinct"]) for c in to_main["commits"]] == [
        (first, False),
        (second, False),
        (merged["sha"], True),
    ]
    assert sandbox.violations == []


async def test_a_commit_another_tag_had_is_not_distinct(
    sandbox: GitHubSandbox, receiver: Receiver
) -> None:
    lonely = dangling_commit(sandbox, sandbox.head(REPO))
    sandbox.create_tag(REPO, "first", lonely)
    sandbox.create_tag(REPO, "again", lonely)
    await sandbox.flush()

    first, again = payloads(receiver)
    assert [(c["id"], c["distinct"]) for c in first["commits"]] == [(lonely, True)]
    assert [(c["id"], c["distinct"]) for c in again["commits"]] == [(lonely, False)]
    assert sandbox.violations == []
