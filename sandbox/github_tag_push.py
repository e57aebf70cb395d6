"""What the ``push`` webhook of a tag says: the commits it lists, whether it was forced,
and its head commit.

A branch's push (``github_push_commits.branch_push``) lists the commits new to the branch and
its head is the branch's new commit. A tag differs in three ways:

- it may name an annotated tag object (``after`` is then the tag, not a commit) or even
  a tree or a blob, which no commit follows: ``head_commit`` is the commit the tag
  peels to, or null;
- it lists only the commits no branch has: a tag on a commit already pushed lists none
  (GitHub's recorded tag push: ``commits: []`` and ``head_commit`` the tagged commit);
- ``forced`` is whether the move is no fast-forward. git refuses to move any existing
  tag without ``--force``, but GitHub sees only the old and new values, as for branches.

Its commits are ``distinct`` unless another tag already had them (no branch has them).
"""

from __future__ import annotations

from sandbox.git_objects import ZERO_SHA
from sandbox.git_tags import peel_commit
from sandbox.github_push_commits import NO_PUSH, RefPush, listed_push
from sandbox.gitstore import GitStore


def tag_push(store: GitStore, full_name: str, ref: str, before: str, after: str) -> RefPush:
    """The push of tag ``ref`` moved from ``before`` to ``after`` (either may be ZERO_SHA)."""
    if after == ZERO_SHA:
        return NO_PUSH
    head = peel_commit(store, full_name, after)
    old = peel_commit(store, full_name, before) if before != ZERO_SHA else None
    forced = before != ZERO_SHA and (
        old is None or head is None or not store.is_ancestor(full_name, old, head)
    )
    if head is None:
        return RefPush([], forced, None)
    # Every revision named by sha: the answer is content-addressed, so git_reads keeps it.
    known = [f"^{sha}" for sha in store.list_refs(full_name, "refs/heads/").values()]
    if old is not None:
        known.append(f"^{old}")
    return listed_push(store, full_name, ref, [head, *known], head, forced)
