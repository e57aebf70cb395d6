"""The GitHub stand-in's commonest git work done in this process, through libgit2 (pygit2).

A git process costs ~2.5 ms of CPU to start; the suite started ~17,000 of them, a sixth
of its CPU. Writing a commit, moving a ref with compare-and-swap, asking for a merge
base and listing commits are each a few microseconds here. Everything is written in
git's own formats (loose objects and refs under a lock file), so git processes and the
long-lived ``cat-file`` reader (``git_batch``) see it as they see their own writes.

Each function answers only what it is sure git would answer the same way, and returns
None otherwise (an identity git would clean up, a ref name outside the plain shapes, a
revision that is not a commit sha of the repository), so that ``gitstore`` asks git
itself. tests/sandbox/test_git_libgit2.py holds each answer to git's.

A repository is opened per call (~0.1 ms): libgit2's objects must not be shared between
threads, the stand-in calls from many, and a fresh handle never sees a removed and
re-made repository's old files.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pygit2
from pygit2.enums import ConfigLevel, ObjectType, ReferenceType

from sandbox.git_objects import ZERO_SHA, Identity, is_sha
from sandbox.git_walk import Walked, listed

# Ref names both git and libgit2 accept as they are (tests/sandbox/test_git_libgit2.py
# checks them against `git check-ref-format`); any other name goes to git.
_PLAIN_REF = re.compile(r"refs(/[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*)+")
_LOCK_SUFFIX = ".lock"
# git strips these from both ends of a name or email ("crud") and drops "<", ">" and
# newlines anywhere; libgit2 does neither, so only identities with none of them match.
_CRUD = frozenset(".,:;<>\"\\'") | {chr(c) for c in range(33)}
_NEVER_IN_IDENT = frozenset("<>\n\0")
# The epoch seconds git reads from a bare number: nine digits or more, before 2100.
_GIT_EPOCHS = range(100_000_000, 4_102_444_800)
_CONFIG_LEVELS = (ConfigLevel.SYSTEM, ConfigLevel.XDG, ConfigLevel.GLOBAL, ConfigLevel.PROGRAMDATA)


@functools.cache
def isolate(home: str) -> None:
    """Read no system, XDG or global git configuration: as ``gitstore``'s git processes,
    whose HOME is ``home`` (empty) and which read no system file. Process-wide, once."""
    for level in _CONFIG_LEVELS:
        pygit2.settings.search_path[level] = home


def open_repository(git_dir: Path) -> pygit2.Repository | None:
    """A handle on the repository at ``git_dir``; None when there is none."""
    try:
        return pygit2.Repository(str(git_dir), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except pygit2.GitError:
        return None


def _commit(repo: pygit2.Repository, sha: str) -> pygit2.Commit | None:
    if not is_sha(sha):
        return None
    found = repo.get(sha)
    return found if isinstance(found, pygit2.Commit) else None


def _plain_ref(ref: str) -> bool:
    return bool(_PLAIN_REF.fullmatch(ref)) and not any(
        part.endswith(_LOCK_SUFFIX) for part in ref.split("/")
    )


def _plain_identity(who: Identity) -> bool:
    return (
        who.timestamp in _GIT_EPOCHS
        and all(
            text and text[0] not in _CRUD and text[-1] not in _CRUD
            for text in (who.name, who.email)
        )
        and not _NEVER_IN_IDENT & set(who.name + who.email)
    )


def _signature(who: Identity) -> pygit2.Signature:
    return pygit2.Signature(who.name, who.email, who.timestamp, 0)


def commit_tree(
    git_dir: Path,
    tree: str,
    parents: Sequence[str],
    message: str,
    author: Identity,
    committer: Identity,
) -> str | None:
    """``git commit-tree`` with these identities at UTC; None where git must write it."""
    if not (_plain_identity(author) and _plain_identity(committer)) or "\0" in message:
        return None
    if len(set(parents)) != len(parents):
        return None  # git drops a repeated parent (with a warning); libgit2 keeps it
    repo = open_repository(git_dir)
    if repo is None or not is_sha(tree) or not isinstance(repo.get(tree), pygit2.Tree):
        return None
    found = [_commit(repo, parent) for parent in parents]
    if any(commit is None for commit in found):
        return None
    oid = repo.create_commit(
        None,
        _signature(author),
        _signature(committer),
        message,
        pygit2.Oid(hex=tree),
        [pygit2.Oid(hex=parent) for parent in parents],
    )
    return str(oid)


def hash_blob(git_dir: Path, data: bytes) -> str | None:
    """``git hash-object -w --stdin``."""
    repo = open_repository(git_dir)
    return None if repo is None else str(repo.create_blob(data))


def update_ref(git_dir: Path, ref: str, new: str, old: str | None) -> bool | None:
    """``git update-ref ref new [old]``: whether it moved; None where git must do it."""
    repo = open_repository(git_dir)
    if repo is None or not _plain_ref(ref) or not is_sha(new):
        return None
    target = repo.get(new)
    if target is None:
        return False  # git: "trying to write ref with nonexistent object"
    if ref.startswith("refs/heads/") and target.type != ObjectType.COMMIT:
        return False  # git: "trying to write non-commit object ... to branch"
    try:
        if old is None or old == ZERO_SHA:
            repo.create_reference_direct(ref, target.id, force=old is None)
            return True
        return _if_at(repo, ref, old, lambda current: current.set_target(target.id))
    except (pygit2.GitError, pygit2.AlreadyExistsError, KeyError, OSError):
        return False  # moved meanwhile, exists, or in the way of (or under) another ref


def delete_ref(git_dir: Path, ref: str, old: str) -> bool | None:
    """``git update-ref -d ref old``: whether it was deleted; None where git must do it."""
    repo = open_repository(git_dir)
    if repo is None or not _plain_ref(ref):
        return None
    try:
        return _if_at(repo, ref, old, lambda current: current.delete())
    except pygit2.GitError:
        return False


def _if_at(
    repo: pygit2.Repository, ref: str, old: str, act: Callable[[pygit2.Reference], None]
) -> bool | None:
    """``act`` on ``ref`` if it points at ``old``: whether it did; None to ask git. libgit2
    checks again under the ref's lock that it still points where it did when read, and
    fails if it moved meanwhile (compare-and-swap)."""
    current = _lookup(repo, ref)
    if not isinstance(current, pygit2.Reference):
        return current
    if str(current.target) != old:
        return False
    act(current)
    return True


def _lookup(repo: pygit2.Repository, ref: str) -> pygit2.Reference | bool | None:
    """The ref to compare and swap; False when there is none (so it has no old value to
    match); None when it names another ref, which git would move instead."""
    try:
        found = repo.lookup_reference(ref)
    except KeyError:
        return False
    return found if found.type == ReferenceType.DIRECT else None


def is_ancestor(git_dir: Path, ancestor: str, descendant: str) -> bool | None:
    """``git merge-base --is-ancestor``; None unless both are commits of the repository."""
    repo = open_repository(git_dir)
    if repo is None or _commit(repo, ancestor) is None or _commit(repo, descendant) is None:
        return None
    return ancestor == descendant or repo.descendant_of(descendant, ancestor)


def merge_base(git_dir: Path, a: str, b: str) -> tuple[str | None] | None:
    """``git merge-base a b`` as a one-tuple (its answer may be "none"); None to ask git."""
    repo = open_repository(git_dir)
    if repo is None or _commit(repo, a) is None or _commit(repo, b) is None:
        return None
    base = repo.merge_base(a, b)
    return (None if base is None else str(base),)


def rev_list(
    git_dir: Path, revs: Sequence[str], *, reverse: bool, limit: int | None, skip: int
) -> list[str] | None:
    """``git rev-list`` of full shas (``sha``, ``^sha``, ``a..b``); None to ask git."""
    repo = open_repository(git_dir)
    if repo is None:
        return None
    shown: list[str] = []
    hidden: list[str] = []
    for rev in revs:
        left, dots, right = rev.partition("..")
        if dots:
            hidden.append(left)
            shown.append(right)
        elif rev.startswith("^"):
            hidden.append(rev[1:])
        else:
            shown.append(rev)
    if any(_commit(repo, sha) is None for sha in shown + hidden):
        return None

    @functools.cache
    def read(sha: str) -> Walked:
        commit = repo[sha]
        assert isinstance(commit, pygit2.Commit)
        return Walked(commit.commit_time, tuple(str(p) for p in commit.parent_ids))

    return listed(shown, hidden, read, skip=skip, limit=limit, reverse=reverse)
