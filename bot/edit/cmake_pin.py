"""Read and edit the upstream pins in vLLM's CMake files.

Longer than 400 lines because it is one small CMake tokenizer plus the editor that
needs it; split, neither half could be read on its own.

A pin is the ``GIT_TAG`` of a ``FetchContent_Declare(<dependency> ...)`` call,
either written in place (``GIT_TAG 0123abc...``, quoted or not) or through a
variable (``GIT_TAG ${CUTLASS_REVISION}`` plus ``set(CUTLASS_REVISION "v4.4.2")``
elsewhere in the same file).

The editor replaces exactly one token and leaves every other byte alone, so a
bump PR shows a one-line diff a reviewer can trust. It tokenizes CMake rather
than using a regex because real files put ``GIT_TAG`` and ``FetchContent_Declare(``
inside comments, declare the same dependency twice (a ``SOURCE_DIR`` branch for
local development), and mix quoted and bare forms. Whenever the file is in a
shape the bot cannot edit with certainty it raises :class:`PinError` with the
reason instead of guessing.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from bot.service.errors import PermanentError

# --- user-facing messages (tests match them) -------------------------------

MSG_PARSE = "cannot parse CMake: {problem}"
MSG_NOT_FOUND = "dependency {dependency!r} not found"
MSG_NO_GIT_TAG = "dependency {dependency!r} has no GIT_TAG (declared at line{s} {lines})"
MSG_AMBIGUOUS = (
    "dependency {dependency!r} is declared with GIT_TAG more than once (lines {lines}); "
    "cannot tell which one is the pin"
)
MSG_REPEATED_GIT_TAG = "GIT_TAG appears more than once in the declaration of {dependency!r}"
MSG_MISSING_VALUE = "GIT_TAG of {dependency!r} has no value"
MSG_UNEDITABLE = "{keyword} value {value!r} is not a form the bot can edit: {reason}"
MSG_VARIABLE_UNSET = "GIT_TAG uses ${{{variable}}} but the file has no set({variable} ...)"
MSG_VARIABLE_SET_TWICE = "${{{variable}}} is set more than once (lines {lines}); cannot tell which"
MSG_SET_FORM = "set({variable} ...) is a form the bot does not understand: {reason}"
MSG_SHALLOW_SHA = (
    "{dependency!r} is fetched with GIT_SHALLOW TRUE, which cannot fetch a commit sha "
    "({value}); pin a tag, or drop GIT_SHALLOW (line {line})"
)
MSG_INVALID_NEW_VALUE = (
    "invalid pin value {value!r}: a pin must be non-empty, without whitespace, quotes, "
    "'$', ';', '(', ')', '#', '[', ']' or backslashes"
)

# Reasons completing MSG_UNEDITABLE / MSG_SET_FORM.
REASON_EMPTY = "it is empty"
REASON_MIXED = "it mixes text and a variable reference"
REASON_GENERATOR_EXPRESSION = "it is a generator expression"
REASON_SPECIAL = "it contains characters with a meaning in CMake (escapes, ';', '$', quotes...)"
REASON_VARIABLE_IN_SET = "it refers to another variable"
REASON_EMPTY_SET = "it sets no value"
REASON_MANY_VALUES = "it sets a list of {count} values"

# --- the CMake tokenizer ------------------------------------------------------

_WHITESPACE = " \t\r\n\f\v"
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

ArgumentKind = Literal["unquoted", "quoted", "bracket", "paren"]


@dataclass(frozen=True)
class _Argument:
    kind: ArgumentKind
    text: str  # source text between the delimiters, escapes left as written
    start: int  # offsets of ``text`` in the file
    end: int


@dataclass(frozen=True)
class _Command:
    name: str
    start: int  # offset of the command name
    arguments: tuple[_Argument, ...]


class _CMakeSyntaxError(Exception):
    def __init__(self, problem: str, offset: int) -> None:
        super().__init__(problem)
        self.problem = problem
        self.offset = offset


class _Lexer:
    """Splits a CMake file into command invocations (comments dropped).

    Follows the cmake-language(7) grammar closely enough for pins: line and
    bracket comments, quoted arguments with escapes, bracket arguments,
    unquoted arguments (``${VAR}`` is just text there) and nested parentheses.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        # A UTF-8 byte order mark is allowed at the start of a CMake file.
        self.pos = 1 if text.startswith("\ufeff") else 0

    def commands(self) -> Iterator[_Command]:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in _WHITESPACE:
                self.pos += 1
            elif char == "#":
                self._skip_comment()
            else:
                yield self._command()

    def _command(self) -> _Command:
        match = _IDENTIFIER.match(self.text, self.pos)
        if match is None:
            raise _CMakeSyntaxError(f"unexpected {self.text[self.pos]!r}", self.pos)
        start = self.pos
        self.pos = match.end()
        # CMake allows only blanks between a command name and its '('.
        while self.text.startswith((" ", "\t"), self.pos):
            self.pos += 1
        if not self.text.startswith("(", self.pos):
            raise _CMakeSyntaxError(f"expected '(' after {match.group()!r}", start)
        self.pos += 1
        return _Command(match.group(), start, self._arguments(start))

    def _arguments(self, command_start: int) -> tuple[_Argument, ...]:
        text = self.text
        arguments: list[_Argument] = []
        depth = 1
        while True:
            if self.pos >= len(text):
                raise _CMakeSyntaxError("unterminated command (missing ')')", command_start)
            char = text[self.pos]
            if char in _WHITESPACE:
                self.pos += 1
            elif char == "#":
                self._skip_comment()
            elif char in "()":
                # Nested parentheses are literal arguments in CMake; keep them so
                # argument counts (e.g. of set()) stay right.
                depth += 1 if char == "(" else -1
                self.pos += 1
                if depth == 0:
                    return tuple(arguments)
                arguments.append(_Argument("paren", char, self.pos - 1, self.pos))
            elif char == '"':
                arguments.append(self._quoted())
            elif (bracket := _BRACKET_OPEN.match(text, self.pos)) is not None:
                arguments.append(self._bracket(bracket))
            else:
                arguments.append(self._unquoted())

    def _skip_comment(self) -> None:
        bracket = _BRACKET_OPEN.match(self.text, self.pos + 1)
        if bracket is not None:
            self._bracket(bracket, what="bracket comment")
            return
        newline = self.text.find("\n", self.pos)
        self.pos = len(self.text) if newline < 0 else newline

    def _bracket(self, opening: re.Match[str], what: str = "bracket argument") -> _Argument:
        closing = "]" + opening.group(1) + "]"
        end = self.text.find(closing, opening.end())
        if end < 0:
            raise _CMakeSyntaxError(f"unterminated {what}", opening.start())
        self.pos = end + len(closing)
        return _Argument("bracket", self.text[opening.end() : end], opening.end(), end)

    def _quoted(self) -> _Argument:
        text = self.text
        start = self.pos + 1
        pos = start
        while pos < len(text):
            char = text[pos]
            if char == "\\":
                pos += 2
            elif char == '"':
                self.pos = pos + 1
                return _Argument("quoted", text[start:pos], start, pos)
            else:
                pos += 1
        raise _CMakeSyntaxError("unterminated quoted argument", self.pos)

    def _unquoted(self) -> _Argument:
        text = self.text
        start = pos = self.pos
        while pos < len(text):
            char = text[pos]
            if char in _WHITESPACE or char in "()#":
                break  # '#' is never part of an unquoted argument: a comment starts
            if char == "\\":
                pos += 2
            elif char == '"':
                # Legacy form a"b c"d: the quoted part belongs to the argument.
                closing = text.find('"', pos + 1)
                pos = len(text) if closing < 0 else closing + 1
            else:
                pos += 1
        pos = min(pos, len(text))
        self.pos = pos
        return _Argument("unquoted", text[start:pos], start, pos)


def _parse(text: str, filename: str) -> list[_Command]:
    try:
        return list(_Lexer(text).commands())
    except _CMakeSyntaxError as exc:
        where = f"{filename}:{_line_of(text, exc.offset)}"
        raise PinError(f"{where}: {MSG_PARSE.format(problem=exc.problem)}") from None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


# --- pins ---------------------------------------------------------------------


class PinError(PermanentError):
    """The pin cannot be read or edited; the message is meant for users.

    Permanent: the same file gives the same answer, so the inbox must not retry.
    """


@dataclass(frozen=True)
class Pin:
    dependency: str  # FetchContent_Declare name
    value: str  # the pinned value as written, unquoted (a SHA, a tag like v4.4.2)
    line: int  # 1-based line of the token that will be edited
    start: int  # character offsets of the token in the text (without quotes)
    end: int
    variable: str | None  # set when GIT_TAG is ${VAR} and the edited token is in set(VAR ...)
    repository: str | None  # GIT_REPOSITORY value of the pinned block, informative only
    shallow: bool = False  # GIT_SHALLOW is true: only a tag or branch can be fetched
    shallow_line: int = 0


# Characters that would change the meaning of a CMake argument (or are not
# allowed in git ref names): a value containing them is not edited or written.
_FORBIDDEN_IN_VALUE = frozenset("\"'$;()#\\[]")
_VARIABLE_REFERENCE = re.compile(r"\$\{([A-Za-z0-9_./+-]+)\}")
_CACHE_TYPES = frozenset({"BOOL", "FILEPATH", "PATH", "STRING", "INTERNAL"})

# Keywords of FetchContent_Declare / ExternalProject_Add that may follow GIT_TAG:
# seeing one right after GIT_TAG means the tag itself is missing.
_DECLARE_KEYWORDS = frozenset(
    [
        "BINARY_DIR",
        "BUILD_COMMAND",
        "CONFIGURE_COMMAND",
        "DOWNLOAD_COMMAND",
        "DOWNLOAD_DIR",
        "DOWNLOAD_EXTRACT_TIMESTAMP",
        "EXCLUDE_FROM_ALL",
        "FIND_PACKAGE_ARGS",
        "GIT_CONFIG",
        "GIT_PROGRESS",
        "GIT_REMOTE_NAME",
        "GIT_REMOTE_UPDATE_STRATEGY",
        "GIT_REPOSITORY",
        "GIT_SHALLOW",
        "GIT_SUBMODULES",
        "GIT_SUBMODULES_RECURSE",
        "GIT_TAG",
        "INSTALL_COMMAND",
        "OVERRIDE_FIND_PACKAGE",
        "PATCH_COMMAND",
        "PREFIX",
        "SOURCE_DIR",
        "SOURCE_SUBDIR",
        "SYSTEM",
        "TEST_COMMAND",
        "UPDATE_COMMAND",
        "UPDATE_DISCONNECTED",
        "URL",
        "URL_HASH",
        "URL_MD5",
    ]
)


def is_plain_value(value: str) -> bool:
    """Whether ``value`` can stand as a pin token, quoted or not, unchanged."""
    return bool(value) and not any(
        char.isspace() or not char.isprintable() or char in _FORBIDDEN_IN_VALUE for char in value
    )


def read_pin(text: str, dependency: str, *, filename: str = "<text>") -> Pin:
    """Find the editable pin of ``dependency`` in ``text`` or raise :class:`PinError`."""
    commands = _parse(text, filename)
    declaration, tag_index = _pinned_declaration(text, commands, dependency, filename)
    arguments = declaration.arguments
    if tag_index + 1 >= len(arguments) or arguments[tag_index + 1].text in _DECLARE_KEYWORDS:
        where = _where(text, filename, arguments[tag_index].start)
        raise PinError(f"{where}: {MSG_MISSING_VALUE.format(dependency=dependency)}")
    tag = arguments[tag_index + 1]
    repository = _keyword_value(arguments, "GIT_REPOSITORY")
    shallow = _shallow_line(text, arguments)

    variable = _variable_name(tag)
    if variable is None:
        _check_editable(text, filename, "GIT_TAG", tag, variable_reason=REASON_MIXED)
        return _pin(text, dependency, tag, None, repository, shallow)
    value = _variable_value(text, commands, variable, tag, filename)
    return _pin(text, dependency, value, variable, repository, shallow)


def set_pin(text: str, dependency: str, new_value: str, *, filename: str = "<text>") -> str:
    """Return ``text`` with the pin of ``dependency`` set to ``new_value``.

    Only the characters of the value token change; quotes, comments, spacing
    and line endings around it are kept. Unchanged text when already pinned.
    """
    if not is_plain_value(new_value):
        raise PinError(MSG_INVALID_NEW_VALUE.format(value=new_value))
    pin = read_pin(text, dependency, filename=filename)
    if pin.value == new_value:
        return text
    if pin.shallow and is_commit_sha(new_value):
        # A shallow clone fetches refs only: CMake would fail at configure time.
        message = MSG_SHALLOW_SHA.format(
            dependency=dependency, value=new_value, line=pin.shallow_line
        )
        raise PinError(f"{filename}: {message}")
    return text[: pin.start] + new_value + text[pin.end :]


def pin_diff(old: str, new: str, path: str) -> str:
    """Unified diff of ``old`` → ``new`` as ``git diff`` shows it; ``""`` when equal."""
    if old == new:
        return ""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    # difflib leaves a last line without newline glued to the next one; git
    # marks it instead, which keeps the diff applicable with `git apply`.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


# --- helpers ------------------------------------------------------------------


def _pinned_declaration(
    text: str, commands: Sequence[_Command], dependency: str, filename: str
) -> tuple[_Command, int]:
    """The one declaration of ``dependency`` carrying GIT_TAG, and the keyword's index."""
    declarations = [
        command
        for command in commands
        if command.name.lower() == "fetchcontent_declare"
        and command.arguments
        and command.arguments[0].kind != "paren"
        and command.arguments[0].text == dependency
    ]
    if not declarations:
        raise PinError(f"{filename}: {MSG_NOT_FOUND.format(dependency=dependency)}")

    pinned: list[tuple[_Command, int]] = []
    for declaration in declarations:
        tag_indexes = [
            index
            for index, argument in enumerate(declaration.arguments[1:], start=1)
            if argument.kind != "paren" and argument.text == "GIT_TAG"
        ]
        if len(tag_indexes) > 1:
            where = _where(text, filename, declaration.start)
            raise PinError(f"{where}: {MSG_REPEATED_GIT_TAG.format(dependency=dependency)}")
        if tag_indexes:
            pinned.append((declaration, tag_indexes[0]))

    if not pinned:
        lines = [_line_of(text, declaration.start) for declaration in declarations]
        message = MSG_NO_GIT_TAG.format(
            dependency=dependency, s="s" if len(lines) > 1 else "", lines=_join(lines)
        )
        raise PinError(f"{filename}: {message}")
    if len(pinned) > 1:
        lines = [_line_of(text, declaration.start) for declaration, _ in pinned]
        message = MSG_AMBIGUOUS.format(dependency=dependency, lines=_join(lines))
        raise PinError(f"{filename}: {message}")
    return pinned[0]


def _variable_name(argument: _Argument) -> str | None:
    """``VAR`` when the argument is exactly ``${VAR}`` (quoted or not)."""
    if argument.kind not in ("quoted", "unquoted"):
        return None  # a bracket argument is literal: no variable expansion
    match = _VARIABLE_REFERENCE.fullmatch(argument.text)
    return match.group(1) if match else None


def _variable_value(
    text: str, commands: Sequence[_Command], variable: str, tag: _Argument, filename: str
) -> _Argument:
    """The value token of the single ``set(variable ...)`` in the file."""
    setters = [
        command
        for command in commands
        if command.name.lower() == "set"
        and command.arguments
        and command.arguments[0].kind != "paren"
        and command.arguments[0].text == variable
    ]
    if not setters:
        where = _where(text, filename, tag.start)
        raise PinError(f"{where}: {MSG_VARIABLE_UNSET.format(variable=variable)}")
    if len(setters) > 1:
        lines = _join(_line_of(text, command.start) for command in setters)
        message = MSG_VARIABLE_SET_TWICE.format(variable=variable, lines=lines)
        raise PinError(f"{filename}: {message}")

    setter = setters[0]
    values = _set_values(setter.arguments[1:])
    if len(values) != 1:
        reason = REASON_EMPTY_SET if not values else REASON_MANY_VALUES.format(count=len(values))
        where = _where(text, filename, setter.start)
        raise PinError(f"{where}: {MSG_SET_FORM.format(variable=variable, reason=reason)}")
    value = values[0]
    _check_editable(
        text, filename, f"set({variable})", value, variable_reason=REASON_VARIABLE_IN_SET
    )
    return value


def _set_values(arguments: Sequence[_Argument]) -> Sequence[_Argument]:
    """The value arguments of ``set(VAR <values>... [PARENT_SCOPE | CACHE ...])``.

    Understood tails: ``PARENT_SCOPE`` and ``CACHE <type> <docstring> [FORCE]``.
    Any other use of those keywords is returned whole, so it reads as a list.
    """
    texts = [argument.text for argument in arguments]
    if texts[-1:] == ["PARENT_SCOPE"]:
        return arguments[:-1]
    tail = 4 if texts[-1:] == ["FORCE"] else 3
    if len(texts) > tail and texts[-tail] == "CACHE" and texts[-tail + 1] in _CACHE_TYPES:
        return arguments[:-tail]
    return arguments


def _check_editable(
    text: str, filename: str, keyword: str, argument: _Argument, *, variable_reason: str
) -> None:
    """Raise unless ``argument`` is a single literal value the bot may rewrite."""
    if argument.kind == "paren":
        reason = REASON_SPECIAL
    elif not argument.text:
        reason = REASON_EMPTY
    elif "$<" in argument.text and argument.kind != "bracket":
        reason = REASON_GENERATOR_EXPRESSION
    elif "${" in argument.text and argument.kind != "bracket":
        reason = variable_reason
    elif not is_plain_value(argument.text):
        reason = REASON_SPECIAL
    else:
        return
    where = _where(text, filename, argument.start)
    message = MSG_UNEDITABLE.format(keyword=keyword, value=argument.text, reason=reason)
    raise PinError(f"{where}: {message}")


def _keyword_value(arguments: Sequence[_Argument], keyword: str) -> str | None:
    for argument, following in pairwise(arguments):
        if argument.text == keyword and argument.kind != "paren":
            return following.text
    return None


_COMMIT_SHA = re.compile(r"[0-9a-fA-F]{7,40}")
# CMake's true constants (if(<constant>)), case-insensitive.
_CMAKE_TRUE = frozenset({"1", "ON", "YES", "TRUE", "Y"})


def is_commit_sha(value: str) -> bool:
    """Whether ``value`` reads as a commit sha (full or abbreviated) rather than a tag."""
    return bool(_COMMIT_SHA.fullmatch(value))


def _shallow_line(text: str, arguments: Sequence[_Argument]) -> int:
    """The line of a true ``GIT_SHALLOW`` in the declaration (0: none or not true)."""
    for argument, following in pairwise(arguments):
        is_shallow = argument.text == "GIT_SHALLOW" and argument.kind != "paren"
        if is_shallow and following.text.upper() in _CMAKE_TRUE:
            return _line_of(text, argument.start)
    return 0


def _pin(
    text: str,
    dependency: str,
    token: _Argument,
    variable: str | None,
    repository: str | None,
    shallow_line: int = 0,
) -> Pin:
    return Pin(
        dependency=dependency,
        value=token.text,
        line=_line_of(text, token.start),
        start=token.start,
        end=token.end,
        variable=variable,
        repository=repository,
        shallow=shallow_line > 0,
        shallow_line=shallow_line,
    )


def _where(text: str, filename: str, offset: int) -> str:
    return f"{filename}:{_line_of(text, offset)}"


def _join(lines: Iterable[int]) -> str:
    return ", ".join(str(line) for line in lines)


__all__ = ["Pin", "PinError", "is_plain_value", "pin_diff", "read_pin", "set_pin"]
