"""The ``also:`` entries a pin's comments ask for: "keep in sync with FILE".

vLLM writes ``# This ref should be kept in sync with tools/install_deepgemm.sh`` in
the deepgemm block: the script repeats the sha as ``DEEPGEMM_GIT_REF="<sha>"``.
Such comments are looked for in and just above the pin's declarations and the
``set()`` of its variable. The file named is searched for the pin's current value,
and the line holding it is read as a variable assignment (shell, CMake, Python,
top-level YAML) or, failing that, turned into a one-group pattern. Every proposal
is read back with ``read_companion``, the reader the bot edits with, so what is
proposed is what the bot will find.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from bot.config.models import CompanionConfig, companion_format
from bot.config.types import CompanionFormat
from bot.edit.companion import CompanionError, read_companion

PROBLEM_NO_PIN_VALUE = "kept in sync with {target}, but the pin has no value to look for there"
PROBLEM_MISSING = "kept in sync with {target}, which is not a file in the checkout"
PROBLEM_UNREADABLE = "kept in sync with {file}, which cannot be read as UTF-8 text"
PROBLEM_NO_VALUE = "kept in sync with {file}, which does not contain the pinned value {value}"
PROBLEM_NOT_READ_BACK = (
    "kept in sync with {file}: {value} is at line {line}, but in no form the bot can read back"
)

# "kept in sync with F", "keep this in sync with F", "Keeps ... In Sync With F".
SYNC_COMMENT = re.compile(
    r"\bke(?:ep|eps|pt)\s+(?:\w+\s+){0,3}?in\s+sync\s+with\s+[`'\"]?([^\s`'\"]+)", re.I
)
_TRAILING_PUNCTUATION = ".,;:)!?"
# Only a name that looks like a file counts: vLLM also writes "keep this in sync with
# CUTLASS_REVISION", a variable of the same file.
_FILE_LIKE = re.compile(r".*/.*|.*\.[A-Za-z0-9]+")
# How far above a GIT_TAG line its FetchContent_Declare( may be, and how long a block runs.
LOOK_BACK_LINES = 20
MAX_BLOCK_LINES = 80
_BLOCK_START = re.compile(r"\b(?:fetchcontent_declare|set)\s*\(", re.I)

_SHELL = re.compile(
    r"""^\s*(?:(?:export|readonly|local|declare(?:\s+-\w+)*)\s+)?"""
    r"""([A-Za-z_]\w*)=(["']?)([^\s"']*)\2\s*(?:[#;].*)?$"""
)
_CMAKE = re.compile(r"""^\s*set\s*\(\s*([A-Za-z_]\w*)\s+("?)([^\s")]*)\2[\s)]""", re.I)
_PYTHON = re.compile(r"""^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*(["'])([^"']*)\2""")
_YAML = re.compile(r"""^([A-Za-z_][\w-]*):\s+(["']?)([^\s"'#]*)\2\s*(?:#.*)?$""")
_FORMS: dict[CompanionFormat, re.Pattern[str]] = {
    "shell": _SHELL,
    "cmake": _CMAKE,
    "python": _PYTHON,
    "yaml": _YAML,
}
_ESCAPED_BLANK = "\\ "
_FULL_SHA = re.compile(r"[0-9a-fA-F]{40}")
_SHA_CLASS = "[0-9a-fA-F]{40}"
_REF_CLASS = "[A-Za-z0-9._/+-]+"  # stops at quotes, parentheses and blanks


@dataclass(frozen=True)
class Companion:
    """A proposed ``also:`` entry, as ``read_companion`` reads it in the checkout."""

    config: CompanionConfig
    line: int
    value: str


def sync_companions(
    repo: Path, file: str, text: str, *, anchors: Iterable[int], value: str | None
) -> tuple[tuple[Companion, ...], tuple[str, ...]]:
    """Companions proposed by the sync comments near ``anchors`` (1-based lines of
    ``file``), and a problem line for each comment that led nowhere."""
    companions: list[Companion] = []
    problems: list[str] = []
    for target in sync_targets(text.splitlines(), anchors):
        found = propose_companion(repo, file, target, value)
        if isinstance(found, Companion):
            if found.config.file != file:  # the pin's own file is never its companion
                companions.append(found)
        else:
            problems.append(found)
    return tuple(companions), tuple(problems)


def sync_targets(lines: Sequence[str], anchors: Iterable[int]) -> list[str]:
    """The files named by sync comments in the blocks at ``anchors``, first seen first."""
    targets: dict[str, None] = {}
    for anchor in sorted(set(anchors)):
        comments = " ".join(_comment(lines[index]) for index in _window(lines, anchor - 1))
        for match in SYNC_COMMENT.finditer(comments):
            target = match.group(1).rstrip(_TRAILING_PUNCTUATION)
            if _FILE_LIKE.fullmatch(target):
                targets.setdefault(target, None)
    return list(targets)


def propose_companion(repo: Path, file: str, target: str, value: str | None) -> Companion | str:
    """The ``also:`` entry for the file a comment of ``file`` names, or why there is none."""
    if not value:
        return PROBLEM_NO_PIN_VALUE.format(target=target)
    found = _resolve(repo, file, target)
    if found is None:
        return PROBLEM_MISSING.format(target=target)
    try:
        text = (repo / found).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return PROBLEM_UNREADABLE.format(file=found)
    return infer_companion(text, found, value)


def infer_companion(text: str, file: str, value: str) -> Companion | str:
    """How ``file`` (holding ``text``) names ``value``: a variable, else a pattern."""
    lines = text.splitlines()
    hits = [index for index, line in enumerate(lines) if value in line]
    if not hits:
        return PROBLEM_NO_VALUE.format(file=file, value=value)
    for index in hits:
        for config in _variable_configs(file, lines[index], value):
            companion = _read_back(text, config, value)
            if companion is not None:
                return companion
    pattern = _pattern_for(lines[hits[0]], value)
    fallback = _config(file, pattern=pattern) if pattern else None
    companion = _read_back(text, fallback, value) if fallback else None
    if companion is None:
        return PROBLEM_NOT_READ_BACK.format(file=file, value=value, line=hits[0] + 1)
    return companion


def _variable_configs(file: str, line: str, value: str) -> Iterator[CompanionConfig]:
    implied = companion_format(file)
    order = sorted(_FORMS, key=lambda form: form != implied)  # the file's own format first
    for form in order:
        match = _FORMS[form].match(line)
        if match is None or match.group(3) != value:
            continue
        # The format is written out only when the file name does not say it.
        config = _config(file, variable=match.group(1), format=None if form == implied else form)
        if config is not None:
            yield config


def _config(
    file: str,
    *,
    variable: str | None = None,
    pattern: str | None = None,
    format: CompanionFormat | None = None,
) -> CompanionConfig | None:
    try:
        return CompanionConfig(file=file, variable=variable, pattern=pattern, format=format)
    except ValidationError:  # e.g. a path the config's grammar refuses
        return None


def _read_back(text: str, config: CompanionConfig, value: str) -> Companion | None:
    try:
        found = read_companion(text, config, filename=config.file)
    except CompanionError:
        return None
    return Companion(config, found.line, found.value) if found.value == value else None


def _pattern_for(line: str, value: str) -> str | None:
    """``<text before the value>(<value's shape>)``; None when nothing precedes it."""
    prefix = line[: line.index(value)].lstrip()
    if not prefix.strip():
        return None  # a bare value on its own line: a pattern would match any such line
    shape = _SHA_CLASS if _FULL_SHA.fullmatch(value) else _REF_CLASS
    # re.escape also escapes blanks, which need none: the YAML reads better without.
    return f"{re.escape(prefix).replace(_ESCAPED_BLANK, ' ')}({shape})"


def _resolve(repo: Path, file: str, target: str) -> str | None:
    """``target`` as a checkout path: from the root first, then from ``file``'s directory."""
    relative = target.lstrip("/")  # "/tools/x.sh" in a comment means the checkout's root
    for base in ("", posixpath.dirname(file)):
        candidate = posixpath.normpath(posixpath.join(base, relative))
        if candidate == ".." or candidate.startswith("../"):
            continue  # never outside the checkout
        if (repo / candidate).is_file():
            return candidate
    return None


def _window(lines: Sequence[str], index: int) -> range:
    """Line indexes of the block around ``index`` plus the comment lines just above it."""
    if not 0 <= index < len(lines):
        return range(0)
    start = _block_start(lines, index)
    end = max(_block_end(lines, start), index)
    first = start
    while first > 0 and lines[first - 1].lstrip().startswith("#"):
        first -= 1
    return range(first, end + 1)


def _block_start(lines: Sequence[str], index: int) -> int:
    for at in range(index, max(index - LOOK_BACK_LINES, -1), -1):
        if _BLOCK_START.search(_code(lines[at])):
            return at
    return index


def _block_end(lines: Sequence[str], start: int) -> int:
    depth = 0
    last = min(start + MAX_BLOCK_LINES, len(lines)) - 1
    for at in range(start, last + 1):
        code = _code(lines[at])
        depth += code.count("(") - code.count(")")
        if depth <= 0:
            return at
    return last


def _code(line: str) -> str:
    return line.split("#", 1)[0]


def _comment(line: str) -> str:
    return line.split("#", 1)[1] if "#" in line else ""
