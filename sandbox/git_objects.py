"""What git's plumbing prints, as plain records, and the parsers that read it.

Identities, commits, tags, tree entries and file diffs are what ``GitStore`` hands
the GitHub stand-in; the parsers here turn ``cat-file``, ``ls-tree`` and ``diff-tree``
output into them. Pure functions of their input: no git process runs here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The sha no object has (a ref that must not exist yet) and the empty tree's, which git
# knows without storing it.
ZERO_SHA = "0" * 40
EMPTY_TREE_SHA = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_SHA_RE = re.compile(r"[0-9a-f]{40}")
_IDENT_RE = re.compile(r"^(?P<name>.*) <(?P<email>[^>]*)> (?P<ts>-?\d+) (?P<tz>[+-]\d{4})$")
_DIFF_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "C": "copied"}


def is_sha(value: str) -> bool:
    """A full object name: 40 lowercase hexadecimal digits, nothing around them."""
    return bool(_SHA_RE.fullmatch(value))


class GitError(Exception):
    """A git command failed in a way the caller did not anticipate."""


@dataclass(frozen=True)
class Identity:
    name: str
    email: str
    timestamp: int  # epoch seconds, always recorded as UTC


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    parents: tuple[str, ...]
    author: Identity
    committer: Identity
    message: str


@dataclass(frozen=True)
class TagInfo:
    """An annotated tag object: what it names (``object`` of ``type``) and who tagged it."""

    sha: str
    object: str
    type: str  # commit | tree | blob | tag
    tag: str
    tagger: Identity | None  # git allows a tag without one (very old tags)
    message: str


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    type: str  # blob | tree | commit
    sha: str
    path: str
    size: int | None


@dataclass(frozen=True)
class TreeChange:
    """One entry of a create-tree request: ``sha`` None deletes ``path``."""

    path: str
    mode: str
    type: str
    sha: str | None


@dataclass(frozen=True)
class FileDiff:
    filename: str
    status: str  # added | removed | modified | renamed
    additions: int
    deletions: int
    blob_sha: str | None
    previous_filename: str | None


def _parse_identity(value: str) -> Identity:
    match = _IDENT_RE.match(value)
    if match is None:
        raise GitError(f"unparseable identity line: {value!r}")
    return Identity(match["name"], match["email"], int(match["ts"]))


def parse_commit(sha: str, raw: bytes) -> CommitInfo:
    header, _, message = raw.decode("utf-8", errors="replace").partition("\n\n")
    tree = ""
    parents: list[str] = []
    author = committer = None
    for line in header.splitlines():
        key, _, value = line.partition(" ")
        if key == "tree":
            tree = value
        elif key == "parent":
            parents.append(value)
        elif key == "author":
            author = _parse_identity(value)
        elif key == "committer":
            committer = _parse_identity(value)
    if author is None or committer is None or not tree:
        raise GitError(f"malformed commit object {sha}")
    return CommitInfo(sha, tree, tuple(parents), author, committer, message)


def parse_tag(sha: str, raw: bytes) -> TagInfo:
    """The tag object ``git cat-file tag`` printed."""
    header, _, message = raw.decode("utf-8", errors="replace").partition("\n\n")
    fields: dict[str, str] = {}
    for line in header.splitlines():
        key, _, value = line.partition(" ")
        fields.setdefault(key, value)
    if not {"object", "type", "tag"} <= fields.keys():
        raise GitError(f"malformed tag object {sha}")
    tagger = _parse_identity(fields["tagger"]) if "tagger" in fields else None
    return TagInfo(sha, fields["object"], fields["type"], fields["tag"], tagger, message)


def parse_ls_tree(out: bytes) -> list[TreeEntry]:
    """The entries of ``git ls-tree -z -l``."""
    entries: list[TreeEntry] = []
    for record in out.decode().split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        mode, kind, sha, size = meta.split()
        entries.append(TreeEntry(mode, kind, sha, path, None if size == "-" else int(size)))
    return entries


def _numstat_counts(fields: list[str]) -> list[tuple[int, int]]:
    """``(additions, deletions)`` per file of ``diff-tree -z --numstat`` (binary: 0, 0)."""
    counts: list[tuple[int, int]] = []
    i = 0
    while i < len(fields):
        record = fields[i]
        if not record:
            i += 1
            continue
        added, deleted, path = record.split("\t", 2)
        if path == "":  # a rename: the two names follow as separate fields
            i += 2
        counts.append((int(added) if added != "-" else 0, int(deleted) if deleted != "-" else 0))
        i += 1
    return counts


def parse_diff(out: bytes) -> list[FileDiff]:
    """Files of ``diff-tree -z --raw --numstat``: one process prints every file's raw record
    (``:``, modes, shas and status, then its path, or two for a rename or copy) and after
    them every file's line counts, in the same order. Paths are taken by position, so a
    path that starts with ``:`` is never read as a record."""
    items = out.decode().split("\0")
    records: list[tuple[str, str, str | None, str]] = []
    j = 0
    while j < len(items) and items[j].startswith(":"):
        _, _, _, new_sha, letter = items[j][1:].split(" ")
        kind = letter[0]
        if kind in "RC":
            records.append((kind, new_sha, items[j + 1], items[j + 2]))
            j += 3
        else:
            records.append((kind, new_sha, None, items[j + 1]))
            j += 2
    counts = _numstat_counts(items[j:])
    return [
        FileDiff(
            filename=filename,
            status=_DIFF_STATUS.get(kind, "changed"),
            additions=counts[n][0] if n < len(counts) else 0,
            deletions=counts[n][1] if n < len(counts) else 0,
            blob_sha=None if kind == "D" else new_sha,
            previous_filename=previous,
        )
        for n, (kind, new_sha, previous, filename) in enumerate(records)
    ]
