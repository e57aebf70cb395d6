"""The files setup writes into the stand-in's repositories: their bytes and git modes,
and their paths as ``git fast-import`` reads them."""

from __future__ import annotations

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
