"""``followup-bot plan bump``: try a pin bump on a local checkout.

A dry run prints the diff the bot would commit; ``--write`` applies it. The
file is read and written as bytes so CRLF line endings and every other byte
the editor does not touch survive exactly as they are in the repository. With
``--pin`` the pin comes from the checkout's own config, and the diff covers its
``also:`` files too, refused (like the bot does) when one already disagrees.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from bot.cli.plan_files import PlanFileError, read_repo_file, write_repo_file
from bot.config.errors import ConfigError
from bot.config.models import PinConfig
from bot.config.parse import CONFIG_PATH, parse_repo_config
from bot.edit.cmake_pin import PinError, pin_diff, read_pin, set_pin
from bot.edit.companion import CompanionError, read_companion, set_companion

EXIT_OK = 0
EXIT_FAILED = 2

MSG_PIN = "error: {reason}"
MSG_ALREADY = "{file}: {dependency} is already pinned to {to}; nothing to change"
MSG_WROTE = "{file}: {dependency} pinned to {to}"
MSG_CONFIG = "error: {problems}"
MSG_UNKNOWN_PIN = "error: {config} has no pin named {pin!r} (pins: {pins})"
MSG_OUT_OF_SYNC = (
    "error: {file}:{line} holds {value!r}, not the pinned {pinned!r}: the files are already "
    "out of sync; make them agree first"
)
MSG_WROTE_FILE = "{file}: written"


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


def plan_pin_bump(repo: Path, name: str, to: str, *, write: bool, out: TextIO, err: TextIO) -> int:
    """Like ``plan_bump`` for the pin ``name`` of the checkout's config: the pin file and
    every ``also:`` file, in one diff, all written or none."""
    try:
        config = parse_repo_config(read_repo_file(repo, CONFIG_PATH), filename=CONFIG_PATH)
    except PlanFileError as exc:
        return _fail(err, str(exc))
    except ConfigError as exc:
        return _fail(err, MSG_CONFIG.format(problems="\n".join(map(str, exc.problems))))
    pin = config.pin(name)
    if pin is None:
        pins = ", ".join(p.name for p in config.pins) or "none"
        return _fail(err, MSG_UNKNOWN_PIN.format(config=CONFIG_PATH, pin=name, pins=pins))
    try:
        edits = _pin_edits(repo, pin, to)
    except (PlanFileError, PinError, CompanionError) as exc:
        message = str(exc)
        return _fail(err, message if message.startswith("error:") else MSG_PIN.format(reason=exc))
    for file, (old, new) in edits.items():
        out.write(pin_diff(old, new, file))
    if write:
        try:
            for file, (_old, new) in edits.items():
                write_repo_file(repo, file, new)
        except PlanFileError as exc:
            return _fail(err, str(exc))
        for file in edits:
            print(MSG_WROTE_FILE.format(file=file), file=err)
    return EXIT_OK


def _pin_edits(repo: Path, pin: PinConfig, to: str) -> dict[str, tuple[str, str]]:
    """Each file the bump changes: (old text, new text), the pin file first."""
    old = read_repo_file(repo, pin.file)
    pinned = read_pin(old, pin.dependency, filename=pin.file).value
    originals = {pin.file: old}
    current = {pin.file: set_pin(old, pin.dependency, to, filename=pin.file)}
    for companion in pin.also:
        file = companion.file
        if file not in originals:
            originals[file] = current[file] = read_repo_file(repo, file)
        found = read_companion(current[file], companion, filename=file)
        if found.value != pinned:
            raise PlanFileError(
                MSG_OUT_OF_SYNC.format(file=file, line=found.line, value=found.value, pinned=pinned)
            )
        current[file] = set_companion(current[file], companion, to, filename=file)
    return {file: (originals[file], current[file]) for file in originals}
