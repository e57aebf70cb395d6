"""What the ``push`` webhook of a tag says: the commits it lists, whether it was forced,
and its head commit.

A branch's push (``GitHubCore.push_details``) lists the commits new to the branch and
its head is the branch's new commit. A tag differs in three ways:

- it may name an annotated tag object (``after`` is then the tag, not a commit) or even
  a tree or a blob, which no commit follows: ``head_commit`` is the commit the tag
  peels to, or null;
- it lists only the commits no branch has: a tag on a commit already pushed lists none
  (GitHub's recorded tag push: ``commits: []`` and ``head_commit`` the tagged commit);
- ``forced`` is whether the move is no fast-forward. git refuses to move any existing
  tag without ``--force``, but GitHub sees only the old and new values, as for branches.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.git_objects import EMPTY_TREE_SHA, ZERO_SHA, CommitInfo
from sandbox.git_tags import peel_commit
from sandbox.github_events import PUSH_COMMITS_CAP, PushedCommit
from sandbox.gitstore import GitStore


@dataclass(frozen=True)
class TagPush:
    commits: list[PushedCommit]  # oldest first
    forced: bool
    head: PushedCommit | None


def _pushed(store: GitStore, full_name: str, info: CommitInfo) -> PushedCommit:
    parent = info.parents[0] if info.parents else EMPTY_TREE_SHA
    return PushedCommit(info, store.diff(full_name, parent, info.sha))


def tag_push(store: GitStore, full_name: str, before: str, after: str) -> TagPush:
    """The push of a tag moved from ``before`` to ``after`` (either may be ZERO_SHA)."""
    if after == ZERO_SHA:
        return TagPush([], False, None)
    head = peel_commit(store, full_name, after)
    old = peel_commit(store, full_name, before) if before != ZERO_SHA else None
    forced = before != ZERO_SHA and (
        old is None or head is None or not store.is_ancestor(full_name, old, head)
    )
    if head is None:
        return TagPush([], forced, None)
    # Every revision named by sha: the answer is content-addressed, so git_reads keeps it.
    known = [f"^{sha}" for sha in store.list_refs(full_name, "refs/heads/").values()]
    if old is not None:
        known.append(f"^{old}")
    shas = store.rev_list(full_name, head, *known, limit=PUSH_COMMITS_CAP)[::-1]
    commits = [_pushed(store, full_name, info) for info in store.read_commits(full_name, shas)]
    if commits and commits[-1].commit.sha == head:
        return TagPush(commits, forced, commits[-1])
    return TagPush(commits, forced, _pushed(store, full_name, store.read_commit(full_name, head)))
