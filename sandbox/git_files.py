"""The files setup writes into the stand-in's repositories: their bytes and git modes,
and their paths as ``git fast-import`` reads them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from sandbox.git_objects import GitError

REGULAR, EXECUTABLE, SYMLINK = "100644", "100755", "120000"
FILE_MODES = (REGULAR, EXECUTABLE, SYMLINK)


@dataclass(frozen=True)
class GitFile:
    """A file's bytes and mode; plain ``str`` (UTF-8) and ``bytes`` setup values mean 100644."""

    data: bytes
    mode: str = REGULAR

    def __post_init__(self) -> None:
        if self.mode not in FILE_MODES:
            raise ValueError(f"file mode {self.mode!r} is not one of {', '.join(FILE_MODES)}")

    @classmethod
    def executable(cls, content: str | bytes) -> GitFile:
        return cls(_as_bytes(content), EXECUTABLE)

    @classmethod
    def symlink(cls, target: str) -> GitFile:
        """A symbolic link: git stores the target path as the blob's content."""
        return cls(target.encode(), SYMLINK)


FileContent: TypeAlias = str | bytes | GitFile


def _as_bytes(content: str | bytes) -> bytes:
    return content.encode() if isinstance(content, str) else content


def as_git_file(content: FileContent) -> GitFile:
    return content if isinstance(content, GitFile) else GitFile(_as_bytes(content))


def fast_import_path(path: str) -> bytes:
    """``path`` as fast-import reads it: C-quoted only when it must be (see git-fast-import)."""
    parts = path.split("/")
    if any(part in ("", ".", "..", ".git") for part in parts):
        raise GitError(f"invalid path {path!r}")  # as git's index refuses it
    if path.startswith('"') or "\n" in path:
        escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'.encode()
    return path.encode()


@dataclass(frozen=True)
class TreeEdit:
    """Write ``content`` (a sha, or a new file's bytes) at ``path`` with ``mode``; a
    ``mode`` of None drops ``path``."""

    path: str
    mode: str | None = None
    content: str | bytes | None = None


def tree_import(scratch: str, base_tree: str | None, edits: Sequence[TreeEdit]) -> bytes:
    """A ``git fast-import`` stream that writes the new files of ``edits`` and reports the
    tree of ``edits`` on ``base_tree``.

    fast-import builds trees only inside a commit, so the edits go into a commit on the
    ref ``scratch`` whose root tree ``ls`` reports; the ``reset`` without ``from`` deletes
    the ref again. Its edits mean what GitHub's do: ``D`` drops a file or a whole
    directory, a file replaces a directory in its place (and a directory a file in its
    way), and only the touched directories are read from ``base_tree``.
    """
    blobs: list[bytes] = []
    lines: list[bytes] = []
    marks = 0
    for edit in edits:
        path = fast_import_path(edit.path)
        if edit.mode is None:
            lines.append(b"D %s\n" % path)
            continue
        if isinstance(edit.content, bytes):
            marks += 1
            blobs += [b"blob\nmark :%d\ndata %d\n" % (marks, len(edit.content)), edit.content]
            blobs.append(b"\n")
            target = b":%d" % marks
        else:
            target = str(edit.content).encode()
        lines.append(b"M %s %s %s\n" % (edit.mode.encode(), target, path))
    head = f"commit {scratch}\ncommitter sandbox <sandbox> 0 +0000\ndata 0\n".encode()
    base = b"" if base_tree is None else f'M 040000 {base_tree} ""\n'.encode()
    tail = f'ls ""\n\nreset {scratch}\n\ndone\n'.encode()
    return b"".join([*blobs, head, base, *lines, tail])


def imported_tree(answer: str) -> str:
    """The tree sha of ``tree_import``'s ``ls`` answer."""
    mode, kind, sha = answer.split("\t", 1)[0].split(" ")
    if (mode, kind) != ("040000", "tree"):
        raise GitError(f"fast-import did not report a tree: {answer!r}")
    return sha
