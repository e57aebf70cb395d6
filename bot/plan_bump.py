"""``followup-bot plan bump``: try a pin bump on a local checkout.

A dry run prints the diff the bot would commit; ``--write`` applies it. The
file is read and written as bytes so CRLF line endings and every other byte
the editor does not touch survive exactly as they are in the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from bot.pins import PinError, pin_diff, set_pin

EXIT_OK = 0
EXIT_FAILED = 2

MSG_OUTSIDE_REPO = "error: {file}: not a path inside the repository {repo}"
MSG_MISSING = "error: {file}: no such file in {repo}"
MSG_UNREADABLE = "error: {file}: cannot read: {reason}"
MSG_NOT_UTF8 = "error: {file}: not UTF-8 text"
MSG_UNWRITABLE = "error: {file}: cannot write: {reason}"
MSG_PIN = "error: {reason}"
MSG_ALREADY = "{file}: {dependency} is already pinned to {to}; nothing to change"
MSG_WROTE = "{file}: {dependency} pinned to {to}"


def plan_bump(
    repo: Path, file: str, dependency: str, to: str, *, write: bool, out: TextIO, err: TextIO
) -> int:
    """Show (or with ``write`` apply) the bump of ``dependency`` in ``repo/file`` to ``to``.

    The diff goes to ``out`` in both modes; notes and errors (one line each)
    go to ``err``. Returns the process exit code: 0, or 2 on any failure.
    """
    path = _path_in_repo(repo, file)
    if path is None:
        return _fail(err, MSG_OUTSIDE_REPO.format(file=file, repo=repo))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return _fail(err, MSG_MISSING.format(file=file, repo=repo))
    except OSError as exc:
        return _fail(err, MSG_UNREADABLE.format(file=file, reason=exc.strerror or exc))
    try:
        old = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _fail(err, MSG_NOT_UTF8.format(file=file))

    try:
        new = set_pin(old, dependency, to, filename=file)
    except PinError as exc:
        return _fail(err, MSG_PIN.format(reason=exc))
    if new == old:
        print(MSG_ALREADY.format(file=file, dependency=dependency, to=to), file=err)
        return EXIT_OK

    out.write(pin_diff(old, new, file))
    if write:
        try:
            path.write_bytes(new.encode("utf-8"))
        except OSError as exc:
            return _fail(err, MSG_UNWRITABLE.format(file=file, reason=exc.strerror or exc))
        print(MSG_WROTE.format(file=file, dependency=dependency, to=to), file=err)
    return EXIT_OK


def _path_in_repo(repo: Path, file: str) -> Path | None:
    """``repo/file`` unless ``file`` is absolute or climbs out of ``repo``."""
    relative = Path(file)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        return None
    return repo / relative


def _fail(err: TextIO, message: str) -> int:
    print(message, file=err)
    return EXIT_FAILED
