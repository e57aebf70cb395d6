"""``followup-bot plan prune``: try an allowlist edit on a local checkout.

A dry run prints the diff the bot would commit; ``--write`` applies it. Each
``--replace`` is ``PATTERN=NEW[,NEW...]``: the entry ``PATTERN`` gives way to
the narrower patterns, in that order (a pattern containing ``,`` cannot be
given this way).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from bot.cli.plan_files import PlanFileError, read_repo_file, write_repo_file
from bot.edit.allowlist import AllowlistError, allowlist_diff, edit_allowlist

EXIT_OK = 0
EXIT_FAILED = 2

MSG_NO_EDIT = "error: nothing to do: give --remove PATTERN or --replace PATTERN=NEW[,NEW...]"
MSG_BAD_REPLACE = "error: argument --replace: expected PATTERN=NEW[,NEW...], got {argument!r}"
MSG_REPLACE_TWICE = "error: argument --replace: {pattern!r} is given more than once"
MSG_ALLOWLIST = "error: {reason}"
MSG_UNCHANGED = "{file}: {variable} already reads that way; nothing to change"
MSG_WROTE = "{file}: {variable} edited ({removed} removed, {replaced} replaced)"


class _UsageError(Exception):
    """A malformed command-line argument; the message is meant for users."""


def plan_prune(
    repo: Path,
    file: str,
    *,
    variable: str,
    remove: Sequence[str],
    replace: Sequence[str],
    write: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    """Show (or with ``write`` apply) the edit of ``variable`` in ``repo/file``.

    The diff goes to ``out`` in both modes; notes and errors (one line each)
    go to ``err``. Returns the process exit code: 0, or 2 on any failure.
    """
    try:
        replacements = _parse_replacements(replace)
    except _UsageError as exc:
        return _fail(err, str(exc))
    if not remove and not replacements:
        return _fail(err, MSG_NO_EDIT)

    try:
        old = read_repo_file(repo, file)
        new = edit_allowlist(
            old, variable=variable, remove=remove, replace=replacements, filename=file
        )
        if new == old:
            print(MSG_UNCHANGED.format(file=file, variable=variable), file=err)
            return EXIT_OK
        out.write(allowlist_diff(old, new, file))
        if write:
            write_repo_file(repo, file, new)
            summary = MSG_WROTE.format(
                file=file,
                variable=variable,
                removed=len(set(remove)),
                replaced=len(replacements),
            )
            print(summary, file=err)
    except PlanFileError as exc:
        return _fail(err, str(exc))
    except AllowlistError as exc:
        return _fail(err, MSG_ALLOWLIST.format(reason=exc))
    return EXIT_OK


def _parse_replacements(arguments: Sequence[str]) -> dict[str, list[str]]:
    """``["PATTERN=NEW[,NEW...]", ...]`` as ``{PATTERN: [NEW, ...]}``, in order."""
    replacements: dict[str, list[str]] = {}
    for argument in arguments:
        pattern, equals, narrower = argument.partition("=")
        news = narrower.split(",")
        if not pattern or not equals or not all(news):
            raise _UsageError(MSG_BAD_REPLACE.format(argument=argument))
        if pattern in replacements:
            raise _UsageError(MSG_REPLACE_TWICE.format(pattern=pattern))
        replacements[pattern] = news
    return replacements


def _fail(err: TextIO, message: str) -> int:
    print(message, file=err)
    return EXIT_FAILED
