"""Read, list and edit the upstream pins in vLLM's CMake files.

Longer than 400 lines because reading, listing and editing a pin share every
check below (a listed pin says why ``set_pin`` would refuse it, in the same
words), and the list of FetchContent keywords takes forty lines on its own.

A pin is the ``GIT_TAG`` of a ``FetchContent_Declare(<dependency> ...)`` call,
either written in place (``GIT_TAG 0123abc...``, quoted or not) or through a
variable (``GIT_TAG ${CUTLASS_REVISION}`` plus ``set(CUTLASS_REVISION "v4.4.2")``
elsewhere in the same file).

An edit changes exactly the pin's literals and leaves every other byte alone, so a
bump PR shows a diff a reviewer can trust. The pin's literals are its own token
and every other argument of the file, outside comments, written exactly as its
value (bare, quoted or bracketed): older vLLM wrote cutlass's tag both as
``GIT_TAG v3.8.0`` and in ``set(CUTLASS_REVISION "v3.8.0" ...)``, kept in sync by a
comment, and a bump must not leave one of them stale. Two exceptions keep the
rule from reaching too far: another pin's value is that pin's, never this one's
(two pins may share a tag), and a value that names neither a release nor a
commit (no digit, not a sha: ``main``) has no literal but its own token, since
such words appear in CMake for other reasons. Comments are never edited.

The editor tokenizes CMake (see :mod:`bot.edit.cmake_syntax`) rather than using a
regex because real files put ``GIT_TAG`` and ``FetchContent_Declare(`` inside
comments, declare the same dependency twice (a ``SOURCE_DIR`` branch for local
development), and mix quoted and bare forms. Whenever the file is in a shape the
bot cannot edit with certainty it raises :class:`PinError` with the reason instead
of guessing.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from bot.core.errors import PermanentError
from bot.edit.cmake_syntax import Argument, CMakeSyntaxError, Command, line_of, parse_commands

# --- user-facing messages (tests match them) -------------------------------

MSG_PARSE = "cannot parse CMake: {problem}"
MSG_NOT_FOUND = "dependency {dependency!r} not found in {filename}; it declares: {declared}"
MSG_NO_GIT_TAG = "dependency {dependency!r} has no GIT_TAG (declared at line{s} {lines})"
MSG_AMBIGUOUS = (
    "dependency {dependency!r} is declared with GIT_TAG more than once (lines {lines}); "
    "cannot tell which one is the pin"
)
MSG_REPEATED_GIT_TAG = "GIT_TAG appears more than once in the declaration of {dependency!r}"
MSG_MISSING_VALUE = "GIT_TAG of {dependency!r} has no value"
MSG_UNEDITABLE = "{keyword} value {value!r} is not a form the bot can edit: {reason}"
MSG_VARIABLE_UNSET = "GIT_TAG uses ${{{variable}}} but the file has no set({variable} ...)"
MSG_VARIABLE_NOT_FOUND = "{variable} is not set in {filename} (it sets: {names})"
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
# Completes MSG_NOT_FOUND / MSG_VARIABLE_NOT_FOUND when the file has no name to list.
NOTHING = "nothing"

# Reasons completing MSG_UNEDITABLE / MSG_SET_FORM.
REASON_EMPTY = "it is empty"
REASON_MIXED = "it mixes text and a variable reference"
REASON_GENERATOR_EXPRESSION = "it is a generator expression"
REASON_SPECIAL = "it contains characters with a meaning in CMake (escapes, ';', '$', quotes...)"
REASON_VARIABLE_IN_SET = "it refers to another variable"
REASON_EMPTY_SET = "it sets no value"
REASON_MANY_VALUES = "it sets a list of {count} values"


class PinError(PermanentError):
    """The pin cannot be read or edited; the message is meant for users.

    Permanent: the same file gives the same answer, so the inbox must not retry.
    """


@dataclass(frozen=True)
class Span:
    """One literal of a pin's value: its 1-based line and offsets, without delimiters."""

    line: int
    start: int
    end: int


@dataclass(frozen=True)
class Pin:
    dependency: str  # FetchContent_Declare name
    value: str  # the pinned value as written, unquoted (a SHA, a tag like v4.4.2)
    line: int  # 1-based line of the pin's own token (GIT_TAG's, or set(VAR)'s value)
    start: int  # character offsets of the token in the text (without quotes)
    end: int
    variable: str | None  # set when GIT_TAG is ${VAR} and the edited token is in set(VAR ...)
    repository: str | None  # GIT_REPOSITORY value of the pinned block, informative only
    shallow: bool = False  # GIT_SHALLOW is true: only a tag or branch can be fetched
    shallow_line: int = 0
    repeats: tuple[Span, ...] = ()  # the value's other literals in the file, in file order

    @property
    def literals(self) -> tuple[Span, ...]:
        """Every literal an edit of this pin changes: its own token and the repeats."""
        own = Span(self.line, self.start, self.end)
        return tuple(sorted((own, *self.repeats), key=lambda span: span.start))


@dataclass(frozen=True)
class DeclaredPin:
    """One ``FetchContent_Declare`` of a file, as :func:`list_pins` reports it."""

    dependency: str
    line: int  # 1-based line of the FetchContent_Declare
    repository: str | None  # GIT_REPOSITORY as written
    raw: str | None  # the GIT_TAG argument as written (without quotes), e.g. ${CUTLASS_REVISION}
    value: str | None  # the pinned value, through set(VAR ...) when GIT_TAG is ${VAR}
    variable: str | None  # VAR when GIT_TAG is ${VAR}
    variable_line: int | None  # line of the value in set(VAR ...), when it was found
    shallow: bool  # GIT_SHALLOW TRUE / ON / 1 / YES / Y
    editable: bool  # set_pin would edit this declaration's pin
    reason: str | None  # when not editable: set_pin's refusal, word for word
    repeats: tuple[int, ...] = ()  # lines of the value's other literals (Pin.repeats)


@dataclass(frozen=True)
class VariableValue:
    """The value of the single ``set(<variable> <value>)`` of a file."""

    variable: str
    value: str  # as written, unquoted
    line: int  # 1-based line of the value
    start: int  # character offsets of the value in the text (without quotes)
    end: int


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
    return _declaration_pin(text, commands, declaration, tag_index, filename)


def set_pin(text: str, dependency: str, new_value: str, *, filename: str = "<text>") -> str:
    """Return ``text`` with the pin of ``dependency`` set to ``new_value``.

    Only the characters of the pin's literals change (:attr:`Pin.literals`); quotes,
    comments, spacing and line endings around them are kept. Unchanged text when
    already pinned.
    """
    if not is_plain_value(new_value):
        raise PinError(MSG_INVALID_NEW_VALUE.format(value=new_value))
    pin = read_pin(text, dependency, filename=filename)
    if pin.value == new_value:
        return text
    refusal = _shallow_refusal(pin, new_value, filename)
    if refusal is not None:
        raise PinError(refusal)
    return _replace_spans(text, pin.literals, new_value)


def list_pins(text: str, *, filename: str = "<text>") -> list[DeclaredPin]:
    """Every ``FetchContent_Declare`` outside comments, in file order.

    Each says whether :func:`set_pin` would edit it and, if not, why (the refusal
    ``set_pin`` would raise; for a pinned sha under GIT_SHALLOW, the refusal of
    pinning that sha). Raises :class:`PinError` only when the file is not CMake.
    """
    commands = _parse(text, filename)
    return [
        _declared_pin(text, commands, declaration, filename)
        for declaration in _declarations(commands)
    ]


def read_variable(text: str, variable: str, *, filename: str = "<text>") -> VariableValue:
    """The value of the single ``set(<variable> <value>)`` in ``text``, or :class:`PinError`.

    The same rules as a pin's ``set(VAR ...)``: one literal value (quoted or not,
    ``PARENT_SCOPE`` and ``CACHE <type> <doc> [FORCE]`` allowed), set exactly once.
    """
    commands = _parse(text, filename)
    setters = _setters(commands, variable)
    if not setters:
        names = _names(command.arguments[0].text for command in _setters(commands, None))
        message = MSG_VARIABLE_NOT_FOUND.format(variable=variable, filename=filename, names=names)
        raise PinError(message)
    token = _single_set_value(text, setters, variable, filename)
    return VariableValue(variable, token.text, line_of(text, token.start), token.start, token.end)


def set_variable(text: str, variable: str, new_value: str, *, filename: str = "<text>") -> str:
    """Return ``text`` with the value of ``set(<variable> ...)`` replaced by ``new_value``."""
    if not is_plain_value(new_value):
        raise PinError(MSG_INVALID_NEW_VALUE.format(value=new_value))
    found = read_variable(text, variable, filename=filename)
    return text[: found.start] + new_value + text[found.end :]


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


_COMMIT_SHA = re.compile(r"[0-9a-fA-F]{7,40}")
# CMake's true constants (if(<constant>)), case-insensitive.
_CMAKE_TRUE = frozenset({"1", "ON", "YES", "TRUE", "Y"})


def is_commit_sha(value: str) -> bool:
    """Whether ``value`` reads as a commit sha (full or abbreviated) rather than a tag."""
    return bool(_COMMIT_SHA.fullmatch(value))


# --- helpers ------------------------------------------------------------------


def _parse(text: str, filename: str) -> list[Command]:
    try:
        return parse_commands(text)
    except CMakeSyntaxError as exc:
        where = _where(text, filename, exc.offset)
        raise PinError(f"{where}: {MSG_PARSE.format(problem=exc.problem)}") from None


def _declarations(commands: Sequence[Command]) -> list[Command]:
    return [
        command
        for command in commands
        if command.name.lower() == "fetchcontent_declare"
        and command.arguments
        and command.arguments[0].kind != "paren"
    ]


def _git_tag_indexes(declaration: Command) -> list[int]:
    return [
        index
        for index, argument in enumerate(declaration.arguments[1:], start=1)
        if argument.kind != "paren" and argument.text == "GIT_TAG"
    ]


def _pinned_declaration(
    text: str, commands: Sequence[Command], dependency: str, filename: str
) -> tuple[Command, int]:
    """The one declaration of ``dependency`` carrying GIT_TAG, and the keyword's index."""
    everything = _declarations(commands)
    declarations = [command for command in everything if command.arguments[0].text == dependency]
    if not declarations:
        declared = _names(command.arguments[0].text for command in everything)
        message = MSG_NOT_FOUND.format(dependency=dependency, filename=filename, declared=declared)
        raise PinError(message)

    pinned: list[tuple[Command, int]] = []
    for declaration in declarations:
        tag_indexes = _git_tag_indexes(declaration)
        if len(tag_indexes) > 1:
            raise PinError(_repeated_git_tag(text, declaration, filename))
        if tag_indexes:
            pinned.append((declaration, tag_indexes[0]))

    if not pinned:
        raise PinError(_no_git_tag(text, declarations, filename))
    if len(pinned) > 1:
        lines = [line_of(text, declaration.start) for declaration, _ in pinned]
        message = MSG_AMBIGUOUS.format(dependency=dependency, lines=_join(lines))
        raise PinError(f"{filename}: {message}")
    return pinned[0]


def _repeated_git_tag(text: str, declaration: Command, filename: str) -> str:
    message = MSG_REPEATED_GIT_TAG.format(dependency=declaration.arguments[0].text)
    return f"{_where(text, filename, declaration.start)}: {message}"


def _no_git_tag(text: str, declarations: Sequence[Command], filename: str) -> str:
    lines = [line_of(text, declaration.start) for declaration in declarations]
    message = MSG_NO_GIT_TAG.format(
        dependency=declarations[0].arguments[0].text,
        s="s" if len(lines) > 1 else "",
        lines=_join(lines),
    )
    return f"{filename}: {message}"


def _declaration_pin(
    text: str, commands: Sequence[Command], declaration: Command, tag_index: int, filename: str
) -> Pin:
    """The pin of a declaration whose GIT_TAG keyword is at ``tag_index``."""
    arguments = declaration.arguments
    dependency = arguments[0].text
    tag = _tag_value(arguments, tag_index)
    if tag is None:
        where = _where(text, filename, arguments[tag_index].start)
        raise PinError(f"{where}: {MSG_MISSING_VALUE.format(dependency=dependency)}")
    repository = _keyword_value(arguments, "GIT_REPOSITORY")
    shallow = _shallow_line(text, arguments)

    variable = _variable_name(tag)
    if variable is None:
        _check_editable(text, filename, "GIT_TAG", tag, variable_reason=REASON_MIXED)
        token = tag
    else:
        token = _variable_value(text, commands, variable, tag, filename)
    pin = _pin(text, dependency, token, variable, repository, shallow)
    return replace(pin, repeats=_repeats(text, commands, pin))


def _repeats(text: str, commands: Sequence[Command], pin: Pin) -> tuple[Span, ...]:
    """The pin's literals other than its own token (the module's docstring has the rule)."""
    if not _names_a_release_or_commit(pin.value):
        return ()
    taken = _other_pins_tokens(commands, pin.dependency)
    return tuple(
        Span(line_of(text, argument.start), argument.start, argument.end)
        for command in commands
        for argument in command.arguments
        if argument.text == pin.value and argument.start not in (pin.start, *taken)
    )


def _names_a_release_or_commit(value: str) -> bool:
    # Tags and shas carry a digit; a sha of letters only is still hex.
    return is_commit_sha(value) or any(char.isdigit() for char in value)


def _other_pins_tokens(commands: Sequence[Command], dependency: str) -> set[int]:
    """Start offsets of the values other dependencies' GIT_TAGs take (through set() too)."""
    taken: set[int] = set()
    for declaration in _declarations(commands):
        if declaration.arguments[0].text == dependency:
            continue
        for index in _git_tag_indexes(declaration):
            tag = _tag_value(declaration.arguments, index)
            variable = None if tag is None else _variable_name(tag)
            if variable is not None:
                setters = _setters(commands, variable)
                taken.update(arg.start for setter in setters for arg in setter.arguments[1:])
            elif tag is not None:
                taken.add(tag.start)
    return taken


def _replace_spans(text: str, spans: Sequence[Span], value: str) -> str:
    """``text`` with each of ``spans`` (in file order, disjoint) replaced by ``value``."""
    pieces: list[str] = []
    last = 0
    for span in spans:
        pieces += (text[last : span.start], value)
        last = span.end
    return "".join(pieces) + text[last:]


def _tag_value(arguments: Sequence[Argument], tag_index: int) -> Argument | None:
    """The argument after GIT_TAG, unless there is none or it is the next keyword."""
    if tag_index + 1 >= len(arguments) or arguments[tag_index + 1].text in _DECLARE_KEYWORDS:
        return None
    return arguments[tag_index + 1]


def _declared_pin(
    text: str, commands: Sequence[Command], declaration: Command, filename: str
) -> DeclaredPin:
    arguments = declaration.arguments
    listed = DeclaredPin(
        dependency=arguments[0].text,
        line=line_of(text, declaration.start),
        repository=_keyword_value(arguments, "GIT_REPOSITORY"),
        raw=None,
        value=None,
        variable=None,
        variable_line=None,
        shallow=_shallow_line(text, arguments) > 0,
        editable=False,
        reason=None,
    )
    # set_pin checks the dependency as a whole first, then the pinned declaration.
    refusal = _dependency_refusal(text, commands, listed.dependency, filename)
    tag_indexes = _git_tag_indexes(declaration)
    if not tag_indexes:
        return replace(listed, reason=refusal or _no_git_tag(text, [declaration], filename))
    if len(tag_indexes) > 1:
        return replace(listed, reason=_repeated_git_tag(text, declaration, filename))
    tag = _tag_value(arguments, tag_indexes[0])
    if tag is not None:
        listed = replace(listed, raw=tag.text, variable=_variable_name(tag))
    try:
        pin = _declaration_pin(text, commands, declaration, tag_indexes[0], filename)
    except PinError as exc:
        return replace(listed, reason=refusal or str(exc))
    refusal = refusal or _shallow_refusal(pin, pin.value, filename)
    return replace(
        listed,
        value=pin.value,
        variable_line=pin.line if pin.variable else None,
        editable=refusal is None,
        reason=refusal,
        repeats=tuple(span.line for span in pin.repeats),
    )


def _dependency_refusal(
    text: str, commands: Sequence[Command], dependency: str, filename: str
) -> str | None:
    """Why no single pin of ``dependency`` can be chosen (another declaration's fault)."""
    try:
        _pinned_declaration(text, commands, dependency, filename)
    except PinError as exc:
        return str(exc)
    return None


def _shallow_refusal(pin: Pin, value: str, filename: str) -> str | None:
    """Why ``value`` cannot be the pin: a shallow clone fetches refs, never a commit sha."""
    if not (pin.shallow and is_commit_sha(value)):
        return None
    message = MSG_SHALLOW_SHA.format(dependency=pin.dependency, value=value, line=pin.shallow_line)
    return f"{filename}: {message}"


def _variable_name(argument: Argument) -> str | None:
    """``VAR`` when the argument is exactly ``${VAR}`` (quoted or not)."""
    if argument.kind not in ("quoted", "unquoted"):
        return None  # a bracket argument is literal: no variable expansion
    match = _VARIABLE_REFERENCE.fullmatch(argument.text)
    return match.group(1) if match else None


def _setters(commands: Sequence[Command], variable: str | None) -> list[Command]:
    """The ``set(variable ...)`` commands; every ``set(...)`` when ``variable`` is None."""
    return [
        command
        for command in commands
        if command.name.lower() == "set"
        and command.arguments
        and command.arguments[0].kind != "paren"
        and variable in (None, command.arguments[0].text)
    ]


def _variable_value(
    text: str, commands: Sequence[Command], variable: str, tag: Argument, filename: str
) -> Argument:
    """The value token of the single ``set(variable ...)`` in the file."""
    setters = _setters(commands, variable)
    if not setters:
        where = _where(text, filename, tag.start)
        raise PinError(f"{where}: {MSG_VARIABLE_UNSET.format(variable=variable)}")
    return _single_set_value(text, setters, variable, filename)


def _single_set_value(
    text: str, setters: Sequence[Command], variable: str, filename: str
) -> Argument:
    if len(setters) > 1:
        lines = _join(line_of(text, command.start) for command in setters)
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


def _set_values(arguments: Sequence[Argument]) -> Sequence[Argument]:
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
    text: str, filename: str, keyword: str, argument: Argument, *, variable_reason: str
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


def _keyword_value(arguments: Sequence[Argument], keyword: str) -> str | None:
    for argument, following in pairwise(arguments):
        if argument.text == keyword and argument.kind != "paren":
            return following.text
    return None


def _shallow_line(text: str, arguments: Sequence[Argument]) -> int:
    """The line of a true ``GIT_SHALLOW`` in the declaration (0: none or not true)."""
    for argument, following in pairwise(arguments):
        is_shallow = argument.text == "GIT_SHALLOW" and argument.kind != "paren"
        if is_shallow and following.text.upper() in _CMAKE_TRUE:
            return line_of(text, argument.start)
    return 0


def _pin(
    text: str,
    dependency: str,
    token: Argument,
    variable: str | None,
    repository: str | None,
    shallow_line: int = 0,
) -> Pin:
    return Pin(
        dependency=dependency,
        value=token.text,
        line=line_of(text, token.start),
        start=token.start,
        end=token.end,
        variable=variable,
        repository=repository,
        shallow=shallow_line > 0,
        shallow_line=shallow_line,
    )


def _where(text: str, filename: str, offset: int) -> str:
    return f"{filename}:{line_of(text, offset)}"


def _join(lines: Iterable[int]) -> str:
    return ", ".join(str(line) for line in lines)


def _names(names: Iterable[str]) -> str:
    """Distinct names in first-seen order, for a "not found" message."""
    return ", ".join(dict.fromkeys(names)) or NOTHING


__all__ = [
    "DeclaredPin",
    "Pin",
    "PinError",
    "Span",
    "VariableValue",
    "is_commit_sha",
    "is_plain_value",
    "list_pins",
    "pin_diff",
    "read_pin",
    "read_variable",
    "set_pin",
    "set_variable",
]
