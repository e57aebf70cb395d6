"""Tags in the stand-in's git repositories: annotated tag objects, peeling, typed refs.

Beside ``GitStore`` rather than in it (which holds commits, trees and refs): these
calls run through its ``run``, so they share its isolation from the machine's git
configuration and its cache of read-only answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.git_objects import GitError, Identity, TagInfo, parse_tag
from sandbox.gitstore import GitStore

TAGS = "refs/tags/"


@dataclass(frozen=True)
class RefInfo:
    """A ref, the type of the object it names, and the commit it peels to (if any)."""

    name: str  # full: "refs/tags/v1.0"
    sha: str
    type: str  # commit | tag | tree | blob
    commit: str | None  # None when the ref does not lead to a commit (a tag of a tree)


def check_tag_name(store: GitStore, full_name: str, name: str) -> None:
    """ValueError unless ``name`` makes a valid ``refs/tags/`` ref (as git and GitHub insist)."""
    proc = store.run(
        store.path(full_name), "check-ref-format", f"{TAGS}{name}", ok_codes=(0, 1, 128)
    )
    if proc.returncode != 0 or not name:
        raise ValueError(f"{name!r} is not a valid tag name")


def write_tag(
    store: GitStore,
    full_name: str,
    *,
    name: str,
    target: str,
    target_type: str,
    tagger: Identity,
    message: str,
) -> str:
    """A new annotated tag object (no ref yet), checked by ``git mktag`` as fsck would."""
    # `git tag -m` ends a message with a newline; a tag object made here looks the same.
    body = message if not message or message.endswith("\n") else message + "\n"
    text = (
        f"object {target}\ntype {target_type}\ntag {name}\n"
        f"tagger {tagger.name} <{tagger.email}> {tagger.timestamp} +0000\n\n{body}"
    )
    proc = store.run(store.path(full_name), "mktag", stdin=text.encode())
    return proc.stdout.decode().strip()


def read_tag(store: GitStore, full_name: str, sha: str) -> TagInfo:
    return parse_tag(sha, store.run(store.path(full_name), "cat-file", "tag", sha).stdout)


def peel_commit(store: GitStore, full_name: str, sha: str) -> str | None:
    """The commit ``sha`` leads to through any tags; None for a tree or blob (or nothing)."""
    proc = store.run(
        store.path(full_name),
        "rev-parse",
        "--verify",
        "--quiet",
        f"{sha}^{{commit}}",
        ok_codes=(0, 1, 128),
    )
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def typed_refs(store: GitStore, full_name: str, prefix: str = "refs/") -> list[RefInfo]:
    """Every ref under ``prefix`` (a directory, e.g. ``refs/tags/``), sorted by name, with
    its object's type and peeled commit; one ``for-each-ref`` for all of them."""
    fmt = "%(refname) %(objectname) %(objecttype) %(*objectname) %(*objecttype)"
    out = store.run(store.path(full_name), "for-each-ref", f"--format={fmt}", prefix).stdout
    refs: list[RefInfo] = []
    for line in out.decode().splitlines():
        parts = line.split(" ")
        if len(parts) != 5:
            raise GitError(f"unexpected for-each-ref line {line!r}")
        name, sha, kind, inner_sha, inner_kind = parts
        if kind == "commit":
            commit: str | None = sha
        elif kind == "tag" and inner_kind == "commit":
            commit = inner_sha
        elif kind == "tag" and inner_kind == "tag":  # a tag of a tag: peel all the way
            commit = peel_commit(store, full_name, sha)
        else:
            commit = None
        refs.append(RefInfo(name, sha, kind, commit))
    return refs
