"""``followup-bot check-config --repo DIR``: the configured pins, checked against a checkout.

What the bot would otherwise find out only when it first syncs a pin: the pin
file is missing, the dependency is not there or not editable, the block fetches
another repository than the configured upstream, a GIT_SHALLOW clone cannot fetch
the commits a branch pin moves to, or an ``also:`` file is missing or holds
another value than the pin. Each problem is one line, ``file[:line]: pin NAME: ...``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from bot.config.models import CompanionConfig, PinConfig, RepoConfig
from bot.edit.cmake_pin import Pin, PinError, read_pin
from bot.edit.companion import CompanionError, read_companion
from bot.pins.facts import same_repository

PROBLEM = "{where}: pin {name}: {problem}"
PROBLEM_NO_FILE = "no such file in the checkout"
PROBLEM_NO_COMPANION_FILE = "no such file in the checkout (listed under also)"
PROBLEM_UNREADABLE = "cannot read it as UTF-8 text"
PROBLEM_OTHER_REPOSITORY = "GIT_REPOSITORY {repository} is not the configured upstream {upstream}"
PROBLEM_SHALLOW_BRANCH = (
    "GIT_SHALLOW TRUE (line {line}) cannot fetch the commits a branch pin moves to; "
    "track tags, or drop GIT_SHALLOW"
)
PROBLEM_OUT_OF_SYNC = "out of sync: {value} here, {pinned} in {file}:{line}"

_LINE_PREFIX = re.compile(r"(\d+): ")


def checkout_problems(repo: Path, config: RepoConfig) -> list[str]:
    """Every problem of every configured pin in the checkout at ``repo``, pin by pin."""
    return [problem for pin in config.pins for problem in _pin_problems(repo, pin)]


def _pin_problems(repo: Path, pin: PinConfig) -> Iterator[str]:
    text = _read(repo, pin.file)
    if text is None:
        yield _problem(pin, pin.file, _missing_or_unreadable(repo, pin.file, PROBLEM_NO_FILE))
        return
    try:
        found = read_pin(text, pin.dependency, filename=pin.file)
    except PinError as exc:
        yield _located(pin, pin.file, str(exc))
        return
    if found.repository is not None and not same_repository(found.repository, pin.upstream):
        problem = PROBLEM_OTHER_REPOSITORY.format(
            repository=found.repository, upstream=pin.upstream
        )
        yield _problem(pin, pin.file, problem)
    if found.shallow and pin.track == "branch":
        where = f"{pin.file}:{found.shallow_line}"
        yield _problem(pin, where, PROBLEM_SHALLOW_BRANCH.format(line=found.shallow_line))
    for companion in pin.also:
        yield from _companion_problems(repo, pin, found, companion)


def _companion_problems(
    repo: Path, pin: PinConfig, found: Pin, companion: CompanionConfig
) -> Iterator[str]:
    text = _read(repo, companion.file)
    if text is None:
        problem = _missing_or_unreadable(repo, companion.file, PROBLEM_NO_COMPANION_FILE)
        yield _problem(pin, companion.file, problem)
        return
    try:
        value = read_companion(text, companion, filename=companion.file)
    except CompanionError as exc:
        yield _located(pin, companion.file, str(exc))
        return
    if value.value != found.value:
        problem = PROBLEM_OUT_OF_SYNC.format(
            value=value.value, pinned=found.value, file=pin.file, line=found.line
        )
        yield _problem(pin, f"{companion.file}:{value.line}", problem)


def _read(repo: Path, file: str) -> str | None:
    try:
        return (repo / file).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _missing_or_unreadable(repo: Path, file: str, missing: str) -> str:
    return PROBLEM_UNREADABLE if (repo / file).is_file() else missing


def _problem(pin: PinConfig, where: str, problem: str) -> str:
    return PROBLEM.format(where=where, name=pin.name, problem=problem)


def _located(pin: PinConfig, file: str, message: str) -> str:
    """An editor's ``file[:line]: text`` message in this module's one-line form."""
    if not message.startswith(f"{file}:"):
        return _problem(pin, file, message)
    rest = message[len(file) + 1 :].lstrip()
    line = _LINE_PREFIX.match(rest)
    if line is None:
        return _problem(pin, file, rest)
    return _problem(pin, f"{file}:{line.group(1)}", rest[line.end() :])
