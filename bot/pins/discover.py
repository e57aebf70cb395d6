"""Every FetchContent pin of a checkout: what ``followup-bot discover`` reports.

A checkout is walked for ``CMakeLists.txt`` and ``*.cmake`` files (never into
``.git``, hidden directories or CMake build trees, whose ``_deps`` hold other
projects' files). Each file's declarations come from ``list_pins``; a dependency
declared twice in one file (vLLM's ``if(<X>_SRC_DIR) ... else() ... endif()``)
is one pin, reported at its editable declaration with the others' lines noted, and
with the lines where the file repeats its value (``repeats``: the pin's other
literals, which a bump changes with it).
Nothing here prints: the CLI renders what ``discover`` returns.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from bot.edit.cmake_pin import DeclaredPin, PinError, list_pins
from bot.pins.sync_comments import Companion, sync_companions
from bot.pins.versions import parse_version

Kind = Literal["sha", "tag", "branch", "other"]

CMAKE_FILE = "CMakeLists.txt"
CMAKE_SUFFIX = ".cmake"
# A directory holding this file is a CMake build tree, whatever its name.
CMAKE_CACHE = "CMakeCache.txt"
SKIPPED_DIRS = frozenset({"build", "builds", "dist", "node_modules", "__pycache__", "venv"})
BUILD_DIR_PREFIXES = ("build-", "build_", "cmake-build-")

REASON_UNREADABLE = "cannot read: {reason}"
REASON_NOT_UTF8 = "not UTF-8 text"

_FULL_SHA = re.compile(r"[0-9a-fA-F]{40}")
# Release tags parse_version may not take: "cutlass-3.5.0", "release/2.1", "2024.01.01".
_RELEASE_TAG = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9_]*[-_/])?[vV]?\d+(?:[._-]\d+)+(?:[A-Za-z]+\d*)?(?:[-_.+][A-Za-z0-9]+)*"
)
_BRANCH_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._/-]*")
_ABBREVIATED_SHA = re.compile(r"[0-9a-fA-F]{7,39}")
_DECLARE_MARKER = "fetchcontent_declare"


@dataclass(frozen=True)
class Skipped:
    """A CMake file that could not be looked into, and why."""

    file: str
    reason: str


@dataclass(frozen=True)
class FoundPin:
    """One dependency's pin, at its editable declaration when there is one."""

    file: str  # relative to the checkout, POSIX
    line: int
    dependency: str
    repository: str | None  # GIT_REPOSITORY as written
    value: str | None  # the pinned value, through set(VAR ...) when GIT_TAG is ${VAR}
    kind: Kind
    raw: str | None  # GIT_TAG as written, e.g. ${CUTLASS_REVISION}
    shallow: bool
    editable: bool
    reason: str | None  # why the bot cannot edit it
    variable: str | None = None
    variable_line: int | None = None
    others: tuple[int, ...] = ()  # lines of this dependency's other declarations in the file
    companions: tuple[Companion, ...] = ()
    sync_problems: tuple[str, ...] = ()  # "kept in sync with" comments that led nowhere
    # Lines of the value's other literals in the file (cutlass's set(CUTLASS_REVISION
    # "v3.8.0") beside GIT_TAG v3.8.0): a bump changes them with the pin.
    repeats: tuple[int, ...] = ()


@dataclass(frozen=True)
class Discovery:
    pins: tuple[FoundPin, ...]
    skipped: tuple[Skipped, ...]


def discover(repo: Path) -> Discovery:
    """Every pin under ``repo`` (a directory), files in path order, pins in line order."""
    pins: list[FoundPin] = []
    skipped: list[Skipped] = []
    for file in cmake_files(repo):
        try:
            text = _read_text(repo / file)
            if _DECLARE_MARKER not in text.lower():
                continue  # most CMake files declare nothing: no need to tokenize them
            declared = list_pins(text, filename=file)
        except _Unreadable as exc:
            skipped.append(Skipped(file, str(exc)))
            continue
        except PinError as exc:  # the file does not parse as CMake
            skipped.append(Skipped(file, str(exc)))
            continue
        pins.extend(_pins_of_file(repo, file, text, declared))
    return Discovery(tuple(pins), tuple(skipped))


def cmake_files(repo: Path) -> list[str]:
    """The CMake files of the checkout, relative POSIX paths in sorted order."""
    found: list[str] = []
    for directory, subdirectories, files in os.walk(repo):
        # Pruned in place, so os.walk never descends into them (nor follows links).
        subdirectories[:] = sorted(name for name in subdirectories if not _skipped_dir(name))
        if CMAKE_CACHE in files and Path(directory) != repo:
            subdirectories[:] = []
            continue
        base = PurePosixPath(Path(directory).relative_to(repo).as_posix())
        found.extend(str(base / name) for name in files if _is_cmake(Path(directory, name)))
    return sorted(found)


def kind_of(value: str | None) -> Kind:
    """What a pinned value looks like: a full commit sha, a release tag, a branch name."""
    if not value:
        return "other"
    if _FULL_SHA.fullmatch(value):
        return "sha"
    if parse_version(value) is not None or _RELEASE_TAG.fullmatch(value):
        return "tag"
    # An abbreviated sha names a commit, yet is not what the bot writes: neither kind.
    if _ABBREVIATED_SHA.fullmatch(value) or not _BRANCH_NAME.fullmatch(value):
        return "other"
    return "branch"


def to_json(discovery: Discovery) -> dict[str, Any]:
    """The ``--json`` document: ``{"pins": [...]}`` with exactly the documented keys."""
    return {"pins": [_pin_json(pin) for pin in discovery.pins]}


def _pin_json(pin: FoundPin) -> dict[str, Any]:
    return {
        "file": pin.file,
        "line": pin.line,
        "dependency": pin.dependency,
        "repository": pin.repository,
        "value": pin.value,
        "kind": pin.kind,
        "shallow": pin.shallow,
        "editable": pin.editable,
        "reason": pin.reason,
        "repeats": list(pin.repeats),
        "companions": [
            {"file": companion.config.file, "line": companion.line, "value": companion.value}
            for companion in pin.companions
        ],
    }


def _pins_of_file(
    repo: Path, file: str, text: str, declared: Sequence[DeclaredPin]
) -> Iterator[FoundPin]:
    for group in _by_dependency(declared):
        chosen = _representative(group)
        others = tuple(sorted(pin.line for pin in group if pin is not chosen))
        # A sync comment may sit by any line holding the value: a repeat's too.
        anchors = [pin.line for pin in group] + list(chosen.repeats)
        if chosen.variable_line:
            anchors.append(chosen.variable_line)
        companions, problems = sync_companions(
            repo, file, text, anchors=anchors, value=chosen.value
        )
        yield FoundPin(
            file=file,
            line=chosen.line,
            dependency=chosen.dependency,
            repository=chosen.repository,
            value=chosen.value,
            kind=kind_of(chosen.value),
            raw=chosen.raw,
            shallow=chosen.shallow,
            editable=chosen.editable,
            reason=chosen.reason,
            variable=chosen.variable,
            variable_line=chosen.variable_line or None,
            others=others,
            companions=companions,
            sync_problems=problems,
            repeats=chosen.repeats,
        )


def _by_dependency(declared: Sequence[DeclaredPin]) -> list[list[DeclaredPin]]:
    groups: dict[str, list[DeclaredPin]] = {}
    for pin in sorted(declared, key=lambda pin: pin.line):
        groups.setdefault(pin.dependency, []).append(pin)
    return list(groups.values())


def _representative(group: Sequence[DeclaredPin]) -> DeclaredPin:
    """The editable declaration; else the one with a GIT_TAG; else the first."""
    for wanted in (lambda pin: pin.editable, lambda pin: pin.raw is not None):
        chosen = next((pin for pin in group if wanted(pin)), None)
        if chosen is not None:
            return chosen
    return group[0]


class _Unreadable(Exception):
    pass


def _read_text(path: Path) -> str:
    # Bytes decoded as UTF-8, newlines untouched: line numbers match the file's.
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _Unreadable(REASON_UNREADABLE.format(reason=exc.strerror or exc)) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Unreadable(REASON_NOT_UTF8) from None


def _skipped_dir(name: str) -> bool:
    lowered = name.lower()
    return name.startswith(".") or lowered in SKIPPED_DIRS or lowered.startswith(BUILD_DIR_PREFIXES)


def _is_cmake(path: Path) -> bool:
    # Regular files only: a link may lead out of the checkout, and a FIFO would block.
    named = path.name == CMAKE_FILE or path.name.endswith(CMAKE_SUFFIX)
    return named and path.is_file() and not path.is_symlink()
