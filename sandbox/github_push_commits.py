"""What a ``push`` webhook says about commits: the ones it lists, whether each is
``distinct``, whether the push was forced, and its head commit.

- **At most 2048 listed, oldest first.** GitHub's push webhook lists every commit of
  the push's compare up to 2048 (the cap of 20 some pages name is the Events API's,
  whose ``PushEvent`` also carries ``size`` and ``distinct_size``; the webhook has
  neither key). Which end of a longer push GitHub keeps is not documented: the
  stand-in keeps the oldest 2048, and ``head_commit`` is the ref's new commit either
  way, so a list as long as the cap may have been cut.
- **``distinct``** is false for a commit another branch or tag already had before the
  push (GitHub: distinct from any commit pushed before): the commits of a pull request
  merged with a merge commit, a new branch made from a topic branch. The refs other
  than the pushed one are as they were before the push, so reaching a commit from any
  of them is the test.
- **The head commit** is the one ``after`` leads to, listed or not (a branch created at
  an existing commit lists none, yet GitHub names that commit as ``head_commit``).

A tag's push lists fewer commits (``github_tag_push``) but is built here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sandbox.git_objects import EMPTY_TREE_SHA, ZERO_SHA, CommitInfo, FileDiff
from sandbox.git_tags import typed_refs
from sandbox.gitstore import GitStore

PUSH_COMMITS_CAP = 2048  # GitHub's cap on the commits a push webhook lists
_PUSHED_REFS = ("refs/heads/", "refs/tags/")  # where commits are pushed; not refs/pull/


@dataclass(frozen=True)
class PushedCommit:
    commit: CommitInfo
    files: Sequence[FileDiff]
    distinct: bool = True


@dataclass(frozen=True)
class RefPush:
    commits: list[PushedCommit]  # oldest first, at most PUSH_COMMITS_CAP
    forced: bool
    head: PushedCommit | None  # None when the ref was deleted or leads to no commit


NO_PUSH = RefPush([], False, None)


def other_refs(store: GitStore, full_name: str, ref: str) -> list[str]:
    """The commits every branch and tag but ``ref`` leads to (a tag's peeled)."""
    return [
        info.commit
        for info in typed_refs(store, full_name)
        if info.name != ref and info.name.startswith(_PUSHED_REFS) and info.commit is not None
    ]


def _pushed(store: GitStore, full_name: str, info: CommitInfo, distinct: bool) -> PushedCommit:
    parent = info.parents[0] if info.parents else EMPTY_TREE_SHA
    return PushedCommit(info, store.diff(full_name, parent, info.sha), distinct)


def listed_push(
    store: GitStore, full_name: str, ref: str, revs: Sequence[str], head: str, forced: bool
) -> RefPush:
    """The push of ``ref`` to commit ``head`` listing what ``revs`` (rev-list arguments,
    every revision by sha so ``git_reads`` may keep the answer) select."""
    shas = store.rev_list(full_name, *revs, reverse=True)[:PUSH_COMMITS_CAP]
    known = [f"^{sha}" for sha in other_refs(store, full_name, ref)]
    # A head ``revs`` hide (a branch made at a commit some ref has) is not distinct.
    fresh = set(store.rev_list(full_name, *revs, *known))
    commits = [
        _pushed(store, full_name, info, info.sha in fresh)
        for info in store.read_commits(full_name, shas)
    ]
    if commits and commits[-1].commit.sha == head:
        return RefPush(commits, forced, commits[-1])
    tip = _pushed(store, full_name, store.read_commit(full_name, head), head in fresh)
    return RefPush(commits, forced, tip)


def branch_push(
    store: GitStore, full_name: str, default_branch: str, ref: str, before: str, after: str
) -> RefPush:
    """The push of a branch moved from ``before`` to ``after`` (either may be ZERO_SHA):
    the commits new to it, or for a new branch those the default branch does not have."""
    if after == ZERO_SHA:
        return NO_PUSH
    if before == ZERO_SHA:
        default = store.get_ref(full_name, f"refs/heads/{default_branch}")
        revs = [after] + ([f"^{default}"] if default and default != after else [])
        return listed_push(store, full_name, ref, revs, after, False)
    forced = not store.is_ancestor(full_name, before, after)
    return listed_push(store, full_name, ref, [f"{before}..{after}"], after, forced)
