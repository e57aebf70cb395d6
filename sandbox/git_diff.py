"""The files two trees differ in, with line counts, read in this process (libgit2).

Every push the stand-in sends lists each pushed commit's files, and a pull request's
files and a compare list theirs: ~2,300 ``git diff-tree -M --raw --numstat`` processes a
run. libgit2 computes the same through the same line-diff code (its xdiff is git's),
so where nothing can differ the answer is taken from it:

- no file was both added and removed, so git's rename detection (``-M``) has nothing
  to pair (where it might, git is asked);
- no file changed type (file and link), none is a submodule, and libgit2 reads every
  changed file as text (git's test, a NUL in the first 8,000 bytes, is part of
  libgit2's; libgit2 also calls some NUL-free files binary, and then git is asked).

tests/sandbox/test_git_diff_libgit2.py holds every answer to ``gitstore``'s git one.
"""

from __future__ import annotations

from pathlib import Path

import pygit2
from pygit2.enums import DeltaStatus, DiffOption, FileMode

from sandbox.git_libgit2 import open_repository
from sandbox.git_objects import EMPTY_TREE_SHA, FileDiff, is_sha

_STATUS = {
    DeltaStatus.ADDED: "added",
    DeltaStatus.DELETED: "removed",
    DeltaStatus.MODIFIED: "modified",
}


def _tree(repo: pygit2.Repository, sha: str) -> pygit2.Tree | None:
    found = repo.get(sha) if is_sha(sha) else None
    if isinstance(found, pygit2.Commit):
        return found.tree
    return found if isinstance(found, pygit2.Tree) else None


def _diff(repo: pygit2.Repository, old: str, new: str) -> pygit2.Diff | None:
    flags = DiffOption.INCLUDE_TYPECHANGE  # so a type change is not a removal and an add
    new_tree = _tree(repo, new)
    if new_tree is None:
        return None
    if old == EMPTY_TREE_SHA:  # git knows the empty tree without storing it
        return new_tree.diff_to_tree(flags=flags, swap=True)
    old_tree = _tree(repo, old)
    return None if old_tree is None else old_tree.diff_to_tree(new_tree, flags=flags)


def tree_diff(git_dir: Path, old: str, new: str) -> list[FileDiff] | None:
    """``gitstore.diff``'s answer; None where git must give it."""
    repo = open_repository(git_dir)
    diff = None if repo is None else _diff(repo, old, new)
    if diff is None:
        return None
    statuses = {delta.status for delta in diff.deltas}
    if not statuses <= set(_STATUS) or {DeltaStatus.ADDED, DeltaStatus.DELETED} <= statuses:
        return None
    files: list[FileDiff] = []
    for patch in diff:
        if patch is None:
            return None
        delta = patch.delta
        if delta.is_binary or FileMode.COMMIT in (delta.old_file.mode, delta.new_file.mode):
            return None
        _, additions, deletions = patch.line_stats
        removed = delta.status == DeltaStatus.DELETED
        files.append(
            FileDiff(
                filename=delta.new_file.path,
                status=_STATUS[delta.status],
                additions=additions,
                deletions=deletions,
                blob_sha=None if removed else str(delta.new_file.id),
                previous_filename=None,
            )
        )
    return files
