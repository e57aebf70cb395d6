"""A tree with some files written, replaced or dropped, built in this process (libgit2).

``gitstore`` builds every tree the stand-in writes (setup's files, the Git Data API's
create-tree) as edits on a base tree. ``git fast-import`` did it in ~6 ms of CPU a call,
~2,000 calls a run; here it takes a fraction of a millisecond. The edits mean what they
mean to fast-import (and to GitHub): they apply in order; a path's missing directories
are made; a file replaces a directory in its place and a directory a file in its way;
dropping a path drops a file or a whole directory, and a directory left empty goes too
(putting the empty tree somewhere is dropping what is there).
Only the directories an edit touches are read; the rest keep their sha.

Only up to ``MAX_NEW_BLOBS`` new files are written here, as loose objects, which is what
fast-import itself does below its ``unpackLimit``; a bigger import (a whole source tree)
goes to fast-import, which packs it. An edit that names an object the repository does
not have, or of the wrong type for its mode, also goes to fast-import, whose error is
the one callers know. tests/sandbox/test_git_tree_edit.py holds every tree built here to
the one fast-import builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Union

import pygit2
from pygit2.enums import FileMode

from sandbox.git_files import TreeEdit
from sandbox.git_libgit2 import open_repository
from sandbox.git_objects import EMPTY_TREE_SHA, is_sha

MAX_NEW_BLOBS = 100  # fast-import's default unpackLimit
_MODES = {
    "100644": (FileMode.BLOB, pygit2.Blob),
    "100755": (FileMode.BLOB_EXECUTABLE, pygit2.Blob),
    "120000": (FileMode.LINK, pygit2.Blob),
    "040000": (FileMode.TREE, pygit2.Tree),
    "160000": (FileMode.COMMIT, None),  # a submodule's commit need not be here
}


Entry = Union[tuple[int, pygit2.Oid], "_Directory"]


class _Directory:
    """A directory being edited: its entries, each an (unchanged) object or an edited
    directory."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree | None) -> None:
        self.repo = repo
        self.entries: dict[str, Entry] = {str(e.name): (e.filemode, e.id) for e in tree or ()}

    def _subdirectory(self, name: str) -> _Directory:
        found = self.entries.get(name)
        if isinstance(found, _Directory):
            return found
        tree = None
        if found is not None and found[0] == FileMode.TREE:
            loaded = self.repo[found[1]]
            assert isinstance(loaded, pygit2.Tree)
            tree = loaded
        made = _Directory(self.repo, tree)  # a file in the way is replaced
        self.entries[name] = made
        return made

    def put(self, parts: list[str], mode: int, oid: pygit2.Oid) -> None:
        if len(parts) == 1:
            self.entries[parts[0]] = (mode, oid)
        else:
            self._subdirectory(parts[0]).put(parts[1:], mode, oid)

    def drop(self, parts: list[str]) -> None:
        name = parts[0]
        if len(parts) == 1:
            self.entries.pop(name, None)
            return
        found = self.entries.get(name)
        if isinstance(found, _Directory) or (found is not None and found[0] == FileMode.TREE):
            self._subdirectory(name).drop(parts[1:])

    def write(self) -> pygit2.Oid | None:
        """The tree's sha; None when it holds nothing (its parent leaves it out)."""
        builder = self.repo.TreeBuilder()
        for name, entry in self.entries.items():
            if isinstance(entry, _Directory):
                oid = entry.write()
                if oid is not None:
                    builder.insert(name, oid, FileMode.TREE)
            else:
                builder.insert(name, entry[1], entry[0])
        return builder.write() if len(builder) else None


def edited_tree(git_dir: Path, base_tree: str | None, edits: Sequence[TreeEdit]) -> str | None:
    """The sha of ``base_tree`` (None: empty) after ``edits``; None to ask fast-import."""
    repo = open_repository(git_dir)
    if repo is None or sum(isinstance(e.content, bytes) for e in edits) > MAX_NEW_BLOBS:
        return None
    base = repo.get(base_tree) if base_tree is not None else None
    if base_tree is not None and not isinstance(base, pygit2.Tree):
        return None
    root = _Directory(repo, base if isinstance(base, pygit2.Tree) else None)
    for edit in edits:
        parts = edit.path.split("/")
        if edit.mode is None or (edit.mode, edit.content) == ("040000", EMPTY_TREE_SHA):
            # fast-import reads "an empty directory here" as "nothing here": a drop.
            root.drop(parts)
            continue
        mode_and_type = _MODES.get(edit.mode)
        if mode_and_type is None or edit.content is None:
            return None
        mode, kind = mode_and_type
        if isinstance(edit.content, bytes):
            oid = repo.create_blob(edit.content)
        else:
            if not is_sha(edit.content):
                return None
            target = repo.get(edit.content)
            if kind is not None and not isinstance(target, kind):
                return None
            oid = pygit2.Oid(hex=edit.content)
        root.put(parts, mode, oid)
    written = root.write()
    return str(written) if written is not None else str(repo.TreeBuilder().write())
