"""``followup-bot plan bump``: try a pin bump on a local checkout.

A dry run prints the diff the bot would commit; ``--write`` applies it. The
file is read and written as bytes so CRLF line endings and every other byte
the editor does not touch survive exactly as they are in the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from bot.cli.plan_files import PlanFileError, read_repo_file, write_repo_file
from bot.edit.cmake_pin import PinError, pin_diff, set_pin

EXIT_OK = 0
EXIT_FAILED = 2

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
    try:
        old = read_repo_file(repo, file)
    except PlanFileError as exc:
        return _fail(err, str(exc))

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
            write_repo_file(repo, file, new)
        except PlanFileError as exc:
            return _fail(err, str(exc))
        print(MSG_WROTE.format(file=file, dependency=dependency, to=to), file=err)
    return EXIT_OK


def _fail(err: TextIO, message: str) -> int:
    print(message, file=err)
    return EXIT_FAILED
