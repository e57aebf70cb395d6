"""``followup-bot discover --repo DIR [--json]``: every FetchContent pin of a checkout.

Text mode prints each pin (where, what it fetches, its value and kind, why the
bot cannot edit it, its ``also:`` companions), a count, then the ``pins:`` block
to paste into ``.github/followup-bot.yml``. ``--json`` prints one document
instead. Files that cannot be read or parsed are warnings on stderr. Exit 0
whenever it ran, uneditable pins included; 2 for a ``--repo`` that is not a
directory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from bot.pins.discover import Discovery, FoundPin, discover, to_json
from bot.pins.discover_yaml import config_block
from bot.pins.sync_comments import Companion

EXIT_OK = 0
EXIT_USAGE = 2

MSG_NOT_A_DIRECTORY = "error: argument --repo: {repo} is not a directory"
MSG_SKIPPED = "warning: {file}: skipped: {reason}"
MSG_PIN = "{file}:{line}: {dependency}"
MSG_REPOSITORY = "  GIT_REPOSITORY {repository}"
MSG_VALUE = "  value {value} ({kind})"
MSG_VALUE_VIA = "  value {value} ({kind}), set in set({variable}) at line {line}"
MSG_NO_VALUE = "  value unknown"
MSG_RAW_ONLY = "  GIT_TAG {raw}, value unknown"
MSG_SHALLOW = "  GIT_SHALLOW TRUE: only a tag or a branch can be fetched"
MSG_OTHERS = "  also declared at line{s} {lines}: reported once, here"
MSG_REPEATS = "  the value is also written at line{s} {lines}: changed with the pin"
MSG_UNEDITABLE = "  cannot edit: {reason}"
MSG_COMPANION = "  kept in sync with {file}:{line}, {how}: {value}"
MSG_SYNC_PROBLEM = "  {problem}"
HOW_VARIABLE = "variable {variable}"
HOW_PATTERN = "pattern {pattern}"
MSG_COUNT = "{pins} in {files}, {uneditable} the bot cannot edit"
MSG_NONE = "no FetchContent pins found in {repo}"
MSG_PASTE = "For .github/followup-bot.yml:"


def discover_command(repo: Path, *, as_json: bool, out: TextIO, err: TextIO) -> int:
    if not repo.is_dir():
        print(MSG_NOT_A_DIRECTORY.format(repo=repo), file=err)
        return EXIT_USAGE
    found = discover(repo)
    for skipped in found.skipped:
        print(MSG_SKIPPED.format(file=skipped.file, reason=skipped.reason), file=err)
    if as_json:
        json.dump(to_json(found), out, indent=2)
        out.write("\n")
        return EXIT_OK
    out.write(render(found, repo))
    return EXIT_OK


def render(found: Discovery, repo: Path) -> str:
    """The text report: pins, a count, then the block to paste."""
    if not found.pins:
        return MSG_NONE.format(repo=repo) + "\n"
    lines = [line for pin in found.pins for line in _pin_lines(pin)]
    files = len({pin.file for pin in found.pins})
    uneditable = sum(not pin.editable for pin in found.pins)
    count = MSG_COUNT.format(
        pins=_plural(len(found.pins), "pin"), files=_plural(files, "file"), uneditable=uneditable
    )
    return "\n".join([*lines, "", count, "", MSG_PASTE, ""]) + "\n" + config_block(found.pins)


def _pin_lines(pin: FoundPin) -> Iterator[str]:
    yield MSG_PIN.format(file=pin.file, line=pin.line, dependency=pin.dependency)
    if pin.repository is not None:
        yield MSG_REPOSITORY.format(repository=pin.repository)
    yield _value_line(pin)
    if pin.shallow:
        yield MSG_SHALLOW
    if pin.others:
        lines = ", ".join(str(line) for line in pin.others)
        yield MSG_OTHERS.format(s="s" if len(pin.others) > 1 else "", lines=lines)
    if pin.repeats:
        lines = ", ".join(str(line) for line in pin.repeats)
        yield MSG_REPEATS.format(s="s" if len(pin.repeats) > 1 else "", lines=lines)
    if not pin.editable:
        yield MSG_UNEDITABLE.format(reason=pin.reason)
    for companion in pin.companions:
        yield _companion_line(companion)
    for problem in pin.sync_problems:
        yield MSG_SYNC_PROBLEM.format(problem=problem)


def _value_line(pin: FoundPin) -> str:
    if pin.value is None:
        return MSG_NO_VALUE if pin.raw is None else MSG_RAW_ONLY.format(raw=pin.raw)
    if pin.variable is not None and pin.variable_line:
        return MSG_VALUE_VIA.format(
            value=pin.value, kind=pin.kind, variable=pin.variable, line=pin.variable_line
        )
    return MSG_VALUE.format(value=pin.value, kind=pin.kind)


def _companion_line(companion: Companion) -> str:
    config = companion.config
    how = (
        HOW_VARIABLE.format(variable=config.variable)
        if config.variable is not None
        else HOW_PATTERN.format(pattern=config.pattern)
    )
    return MSG_COMPANION.format(
        file=config.file, line=companion.line, how=how, value=companion.value
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
