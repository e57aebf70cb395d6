"""One file of a local checkout, read and written for the ``plan`` dry runs.

The file is handled as bytes decoded as UTF-8 (no newline translation), so
CRLF line endings and every byte an editor does not touch survive exactly as
they are in the repository. Failures carry a one-line message for the user.
"""

from __future__ import annotations

from pathlib import Path

MSG_OUTSIDE_REPO = "error: {file}: not a path inside the repository {repo}"
MSG_MISSING = "error: {file}: no such file in {repo}"
MSG_UNREADABLE = "error: {file}: cannot read: {reason}"
MSG_NOT_UTF8 = "error: {file}: not UTF-8 text"
MSG_UNWRITABLE = "error: {file}: cannot write: {reason}"


class PlanFileError(Exception):
    """The file cannot be read or written; the message is meant for users."""


def read_repo_file(repo: Path, file: str) -> str:
    """The text of ``repo/file``, exactly as stored."""
    path = _path_in_repo(repo, file)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PlanFileError(MSG_MISSING.format(file=file, repo=repo)) from None
    except OSError as exc:
        reason = exc.strerror or exc
        raise PlanFileError(MSG_UNREADABLE.format(file=file, reason=reason)) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanFileError(MSG_NOT_UTF8.format(file=file)) from None


def write_repo_file(repo: Path, file: str, text: str) -> None:
    """Replace the content of ``repo/file`` with ``text``, byte for byte."""
    path = _path_in_repo(repo, file)
    try:
        path.write_bytes(text.encode("utf-8"))
    except OSError as exc:
        reason = exc.strerror or exc
        raise PlanFileError(MSG_UNWRITABLE.format(file=file, reason=reason)) from None


def _path_in_repo(repo: Path, file: str) -> Path:
    """``repo/file``, refusing an absolute ``file`` or one that climbs out of ``repo``."""
    relative = Path(file)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise PlanFileError(MSG_OUTSIDE_REPO.format(file=file, repo=repo))
    return repo / relative
