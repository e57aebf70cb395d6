"""Read and edit a pin's companions: other files that hold the pinned value.

Longer than 400 lines because it holds one small reader per format, and the readers
share the refusal messages and the edit-then-read-back step that makes an edit safe.

A companion (``also:`` in the config) is changed in the same commit as the pin, and
as narrowly: only the value's characters are replaced, so quotes, comments, trailing
spaces and CRLF line endings stay as they were. The value is found by

- ``shell``: ``NAME="v"``, ``NAME='v'`` or ``NAME=v`` alone on its line, after an
  optional ``export`` / ``readonly`` / ``local`` (commented-out lines do not count).
  An assignment from the script's arguments (``$1``..``$9``, ``$OPTARG``, bare or in
  double quotes, ``${2}`` or ``${1#*=}`` too) is not the value: it overrides the
  default at run time, as vLLM's ``install_deepgemm.sh`` does in its option branch
  ``--ref) DEEPGEMM_GIT_REF="$2"``. It is left alone and the default is edited;
- ``cmake``: the single ``set(NAME v)``, through the CMake tokenizer of the pin editor;
- ``python``: a module-level ``NAME = "v"`` or ``NAME: str = 'v'``, found with :mod:`ast`;
- ``yaml``: a key path ``a.b.c`` to a plain or quoted scalar, found on PyYAML's nodes;
- ``pattern``: a regular expression (``re.MULTILINE``) that matches exactly once,
  whose one group is the value.

Whenever the value is not a plain literal set exactly once, the reader raises
:class:`CompanionError` with the reason instead of guessing, and so does the editor
when the edited file would not read back the value it wrote. Known limits: a shell
heredoc or multi-line string holding ``NAME=...`` lines reads as assignments (an
extra one is refused as a second setting), and Python assignment expressions
(``:=``) and ``global`` writes in functions are not looked at.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import yaml

from bot.config.models import CompanionConfig
from bot.config.types import CompanionFormat
from bot.core.errors import PermanentError
from bot.edit.cmake_pin import PinError, read_variable
from bot.edit.cmake_syntax import line_of

# --- user-facing messages (tests match them) -------------------------------

MSG_NOT_FOUND = "{name} is not set in {filename} (it sets: {names})"
MSG_KEY_NOT_FOUND = "{name} is not in {filename} ({where} has keys: {names})"
MSG_NOT_A_MAPPING = "{name} is not in {filename}: {where} is not a mapping"
MSG_SET_TWICE = "{name} is set more than once in {filename} (lines {lines}); cannot tell which"
MSG_ONLY_FROM_ARGUMENTS = (
    "{name} is set in {filename} only from the script's arguments (line{s} {lines}); "
    "there is no default value to edit"
)
MSG_NOT_LITERAL = "{filename}:{line}: {name} is not set to a plain value the bot can edit: {reason}"
MSG_PARSE = "cannot parse {filename} as {format}: {problem}"
MSG_PATTERN_NONE = "the pattern {pattern!r} matches nothing in {filename}"
MSG_PATTERN_MANY = (
    "the pattern {pattern!r} matches {count} times in {filename} (lines {lines}); "
    "it must match exactly once"
)
MSG_PATTERN_NO_GROUP = (
    "{filename}:{line}: the pattern {pattern!r} matches without its group: there is no value"
)
MSG_PATTERN_LINE_BREAK = (
    "{filename}:{line}: the value the pattern {pattern!r} captures spans a line break"
)
MSG_INVALID_NEW_VALUE = (
    "invalid value {value!r}: a pinned value is letters, digits, '.', '_', '-', '+', '/' "
    "and '@', starting with a letter or a digit"
)
MSG_NOT_READ_BACK = "writing {value!r} to {filename} would not read back: {problem}"
MSG_READS_OTHER = "the file would hold {value!r} there"
NOTHING = "nothing"  # completes MSG_NOT_FOUND / MSG_KEY_NOT_FOUND
MORE_NAMES = " and {count} more"
TOP_LEVEL = "the document"  # the YAML mapping a key path starts from

# Reasons completing MSG_NOT_LITERAL.
REASON_SHELL_EXPANSION = "it expands a variable or runs a command ('$', '`', '~')"
REASON_SHELL_QUOTING = "it mixes quoting or escapes"
REASON_SHELL_UNTERMINATED = "its quote does not close on the same line"
REASON_SHELL_TRAILING = "the line goes on after the value"
REASON_PY_TARGET = "it is not a plain NAME = ... assignment"
REASON_PY_FSTRING = "it is an f-string"
REASON_PY_NOT_STRING = "it is not a string literal"
REASON_PY_FORM = "it is not one plain quoted string (prefix, escapes, triple quotes, concatenation)"
REASON_YAML_NOT_SCALAR = "it is a {kind}, not a single value"
REASON_YAML_ALIAS = "it is an alias of a value set elsewhere"
REASON_YAML_BLOCK = "it is a block scalar ('|' or '>')"
REASON_YAML_FORM = "it has an anchor, a tag or escapes, or spans lines"
REASON_YAML_NOT_STRING = "unquoted, it reads as {kind}, not a string"

_FORMAT_NAMES: dict[CompanionFormat, str] = {"python": "Python", "yaml": "YAML"}
_MAX_NAMES = 20  # a "not found" message lists at most this many names


class CompanionError(PermanentError):
    """The companion's value cannot be read or edited; the message is meant for users."""


@dataclass(frozen=True)
class CompanionValue:
    value: str  # as written, without quotes
    line: int  # 1-based line of the value
    start: int  # character offsets of the value in the text (without quotes)
    end: int


def read_companion(text: str, companion: CompanionConfig, *, filename: str) -> CompanionValue:
    """Find the value ``companion`` names in ``text``, or raise :class:`CompanionError`."""
    if companion.pattern is not None:
        return _read_pattern(text, companion.pattern, filename)
    # The config validator guarantees both once there is no pattern.
    assert companion.variable is not None
    assert companion.resolved_format is not None
    return _READERS[companion.resolved_format](text, companion.variable, filename)


def set_companion(text: str, companion: CompanionConfig, new_value: str, *, filename: str) -> str:
    """Return ``text`` with the companion's value replaced by ``new_value``.

    Only the value's characters change; unchanged text when it already holds it.
    """
    if not _NEW_VALUE.fullmatch(new_value):
        raise CompanionError(MSG_INVALID_NEW_VALUE.format(value=new_value))
    found = read_companion(text, companion, filename=filename)
    if found.value == new_value:
        return text
    edited = text[: found.start] + new_value + text[found.end :]
    # A pattern may not match the new value, an unquoted YAML value may turn into a
    # number: the edit stands only if the bot reads back what it wrote, where it wrote it.
    try:
        again = read_companion(edited, companion, filename=filename)
    except CompanionError as exc:
        problem = str(exc)
    else:
        if (again.value, again.start) == (new_value, found.start):
            return edited
        problem = MSG_READS_OTHER.format(value=again.value)
    raise CompanionError(
        MSG_NOT_READ_BACK.format(value=new_value, filename=filename, problem=problem)
    )


# Safe unquoted in shell and YAML, and inside any quotes of the four formats.
_NEW_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+@-]*", re.ASCII)


# --- shell ------------------------------------------------------------------------

_SHELL_ASSIGNMENT = re.compile(
    r"^[ \t]*(?:(?:export|readonly|local)[ \t]+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=",
    re.MULTILINE,
)
_SHELL_WORD = re.compile(r"[^ \t\r\n;&|<>()]*")
# After the value: nothing, or blanks and maybe a comment ('#' right after a word is
# part of the word in shell, so it needs a blank before it).
_SHELL_REST = re.compile(r"(?:[ \t]+(?:#.*)?)?\r?")
# Characters that expand, and characters that quote or escape, by the value's quote.
_SHELL_SPECIAL = {'"': ("$`", "\\"), "'": ("", ""), "": ("$`~", "\\\"'")}


# The whole value of an assignment from the script's (or a function's) arguments:
# "$2", $OPTARG, "${1#*=}" ("--ref=*)"). Defaults such as ${1:-v} hold a literal: not these.
_SHELL_FROM_ARGUMENTS = re.compile(
    r'(?P<quote>"?)\$(?:[1-9]|OPTARG|\{(?:[1-9]|OPTARG)(?:(?:##?|%%?)[^}"\\$`]*)?\})'
    r"(?P=quote)(?=[ \t;&|)]|\r?$)",
    re.MULTILINE,
)


def _read_shell(text: str, name: str, filename: str) -> CompanionValue:
    assignments = list(_SHELL_ASSIGNMENT.finditer(text))
    mine = [match for match in assignments if match["name"] == name]
    defaults = [match for match in mine if not _SHELL_FROM_ARGUMENTS.match(text, match.end())]
    if mine and not defaults:
        lines = [line_of(text, match.start()) for match in mine]
        message = MSG_ONLY_FROM_ARGUMENTS.format(
            name=name, filename=filename, s="s" if len(lines) > 1 else "", lines=_join(lines)
        )
        raise CompanionError(message)
    missing = _not_found(name, filename, (match["name"] for match in assignments))
    _only_once(name, filename, [line_of(text, match.start()) for match in defaults], missing)
    return _shell_value(text, defaults[0].end(), name, filename)


def _shell_value(text: str, start: int, name: str, filename: str) -> CompanionValue:
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    quote = text[start] if text[start : start + 1] in ("'", '"') else ""
    if quote:
        close = text.find(quote, start + 1, line_end)
        if close < 0:
            raise _not_literal(text, start, name, filename, REASON_SHELL_UNTERMINATED)
        start, end, after = start + 1, close, close + 1
    else:
        end = after = next(_SHELL_WORD.finditer(text, start)).end()
    value = text[start:end]
    expanding, quoting = _SHELL_SPECIAL[quote]
    if any(char in expanding for char in value):
        raise _not_literal(text, start, name, filename, REASON_SHELL_EXPANSION)
    if any(char in quoting for char in value):
        raise _not_literal(text, start, name, filename, REASON_SHELL_QUOTING)
    if not _SHELL_REST.fullmatch(text, after, line_end):
        raise _not_literal(text, start, name, filename, REASON_SHELL_TRAILING)
    return CompanionValue(value, line_of(text, start), start, end)


# --- CMake ------------------------------------------------------------------------


def _read_cmake(text: str, name: str, filename: str) -> CompanionValue:
    try:
        found = read_variable(text, name, filename=filename)
    except PinError as exc:
        raise CompanionError(str(exc)) from None
    return CompanionValue(found.value, found.line, found.start, found.end)


# --- Python -----------------------------------------------------------------------

_PYTHON_NEWLINE = re.compile(r"\r\n?|\n")  # the line breaks Python's parser counts
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _read_python(text: str, name: str, filename: str) -> CompanionValue:
    # ast refuses a byte order mark in a str; the offsets below skip it.
    bom = 1 if text.startswith("\ufeff") else 0
    try:
        tree = ast.parse(text[bom:])
    except SyntaxError as exc:
        problem = f"{exc.msg} (line {exc.lineno})"
        raise CompanionError(_parse_error(filename, "python", problem)) from None
    statements = list(_module_statements(tree))
    mine = [statement for statement in statements if name in _bound_names(statement)]
    missing = _not_found(name, filename, (n for s in statements for n in _bound_names(s)))
    _only_once(name, filename, [statement.lineno for statement in mine], missing)
    return _python_value(text, bom, mine[0], name, filename)


def _module_statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Statements run at module level, inside if/try/with/for blocks too."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _SCOPES):
            continue
        if isinstance(child, ast.stmt):
            yield child
        yield from _module_statements(child)


def _bound_names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.Assign):
        return [name for target in statement.targets for name in _target_names(target)]
    if isinstance(statement, ast.AugAssign) or (
        isinstance(statement, ast.AnnAssign) and statement.value is not None
    ):
        return _target_names(statement.target)
    return []


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []  # an attribute or a subscript binds no module name


def _python_value(
    text: str, bom: int, statement: ast.stmt, name: str, filename: str
) -> CompanionValue:
    value = _assigned_value(statement)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        starts = [bom, *(match.end() for match in _PYTHON_NEWLINE.finditer(text, bom))]
        start = _python_offset(text, starts, value.lineno, value.col_offset)
        end = _python_offset(text, starts, value.end_lineno or 0, value.end_col_offset or 0)
        quote = text[start]
        if quote in "\"'" and text[start:end] == quote + value.value + quote:
            return CompanionValue(value.value, line_of(text, start), start + 1, end - 1)
        reason = REASON_PY_FORM
    elif value is None:
        reason = REASON_PY_TARGET
    elif isinstance(value, ast.JoinedStr):
        reason = REASON_PY_FSTRING
    else:
        reason = REASON_PY_NOT_STRING
    message = MSG_NOT_LITERAL.format(
        filename=filename, line=statement.lineno, name=name, reason=reason
    )
    raise CompanionError(message)


def _assigned_value(statement: ast.stmt) -> ast.expr | None:
    """The value of ``NAME = value`` / ``NAME: type = value``; None for other forms."""
    if isinstance(statement, ast.Assign):
        single = len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
        return statement.value if single else None
    if isinstance(statement, ast.AnnAssign):
        return statement.value
    return None  # an augmented assignment


def _python_offset(text: str, starts: Sequence[int], line: int, column: int) -> int:
    """The offset in ``text`` of ast's (line, UTF-8 byte column); ``starts`` of the lines."""
    line_start = starts[line - 1]
    # A character takes at least one byte: the column's bytes lie in the first `column` chars.
    prefix = text[line_start : line_start + column].encode("utf-8")[:column]
    return line_start + len(prefix.decode("utf-8"))


# --- YAML -------------------------------------------------------------------------

_YAML_STRING = "tag:yaml.org,2002:str"
_NODE_KINDS: dict[type[yaml.Node], str] = {
    yaml.MappingNode: "mapping",
    yaml.SequenceNode: "sequence",
}


def _read_yaml(text: str, path: str, filename: str) -> CompanionValue:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise CompanionError(_parse_error(filename, "yaml", problem)) from None
    key, node = _yaml_entry(root, path, filename)
    if not isinstance(node, yaml.ScalarNode):
        kind = REASON_YAML_NOT_SCALAR.format(kind=_NODE_KINDS[type(node)])
        raise _not_literal(text, key.start_mark.index, path, filename, kind)
    reason = _yaml_problem(text, key, node)
    if reason is not None:
        raise _not_literal(text, key.start_mark.index, path, filename, reason)
    start = node.start_mark.index + len(node.style or "")
    return CompanionValue(node.value, line_of(text, start), start, start + len(node.value))


def _yaml_entry(root: yaml.Node | None, path: str, filename: str) -> tuple[yaml.Node, yaml.Node]:
    """The (key, value) nodes at the end of the key path ``a.b.c``."""
    node, parts = root, path.split(".")
    for depth, part in enumerate(parts):
        where = ".".join(parts[:depth]) or TOP_LEVEL
        if not isinstance(node, yaml.MappingNode):
            message = MSG_NOT_A_MAPPING.format(name=path, filename=filename, where=where)
            raise CompanionError(message)
        keys = [key for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
        entries = [(key, value) for key, value in node.value if key in keys and key.value == part]
        names = _listing(key.value for key in keys)
        missing = MSG_KEY_NOT_FOUND.format(name=path, filename=filename, where=where, names=names)
        lines = [key.start_mark.line + 1 for key, _ in entries]
        _only_once(".".join(parts[: depth + 1]), filename, lines, missing)
        entry = entries[0]
        node = entry[1]
    return entry


def _yaml_problem(text: str, key: yaml.Node, node: yaml.ScalarNode) -> str | None:
    # compose hands an alias the anchored node itself, which lies before this key.
    if node.start_mark.index < key.end_mark.index:
        return REASON_YAML_ALIAS
    if node.style in ("|", ">"):
        return REASON_YAML_BLOCK
    quote = node.style or ""
    if text[node.start_mark.index : node.end_mark.index] != quote + node.value + quote:
        return REASON_YAML_FORM
    if node.tag != _YAML_STRING:
        return REASON_YAML_NOT_STRING.format(kind=node.tag.rsplit(":", 1)[-1])
    return None


# --- pattern ----------------------------------------------------------------------


def _read_pattern(text: str, pattern: str, filename: str) -> CompanionValue:
    matches = list(re.finditer(pattern, text, re.MULTILINE))
    if not matches:
        raise CompanionError(MSG_PATTERN_NONE.format(pattern=pattern, filename=filename))
    if len(matches) > 1:
        lines = _join(line_of(text, match.start()) for match in matches)
        message = MSG_PATTERN_MANY.format(
            pattern=pattern, count=len(matches), filename=filename, lines=lines
        )
        raise CompanionError(message)
    match = matches[0]
    start, end = match.span(1)
    line = line_of(text, max(start, match.start()))
    if start < 0:
        message = MSG_PATTERN_NO_GROUP.format(filename=filename, line=line, pattern=pattern)
        raise CompanionError(message)
    value = text[start:end]
    if "\n" in value or "\r" in value:
        message = MSG_PATTERN_LINE_BREAK.format(filename=filename, line=line, pattern=pattern)
        raise CompanionError(message)
    return CompanionValue(value, line, start, end)


# --- shared -----------------------------------------------------------------------


def _only_once(name: str, filename: str, lines: Sequence[int], missing: str) -> None:
    """Raise ``missing`` when nothing sets ``name``, or the lines when several do."""
    if not lines:
        raise CompanionError(missing)
    if len(lines) > 1:
        message = MSG_SET_TWICE.format(name=name, filename=filename, lines=_join(lines))
        raise CompanionError(message)


def _not_found(name: str, filename: str, names: Iterable[str]) -> str:
    return MSG_NOT_FOUND.format(name=name, filename=filename, names=_listing(names))


def _not_literal(text: str, offset: int, name: str, filename: str, reason: str) -> CompanionError:
    line = line_of(text, offset)
    return CompanionError(
        MSG_NOT_LITERAL.format(filename=filename, line=line, name=name, reason=reason)
    )


def _parse_error(filename: str, format_: CompanionFormat, problem: str) -> str:
    return MSG_PARSE.format(filename=filename, format=_FORMAT_NAMES[format_], problem=problem)


def _listing(names: Iterable[str]) -> str:
    """Distinct names in first-seen order, at most _MAX_NAMES of them."""
    distinct = list(dict.fromkeys(names))
    hidden = len(distinct) - _MAX_NAMES
    listed = ", ".join(distinct[:_MAX_NAMES]) or NOTHING
    return listed + (MORE_NAMES.format(count=hidden) if hidden > 0 else "")


def _join(lines: Iterable[int]) -> str:
    return ", ".join(str(line) for line in lines)


_READERS: dict[CompanionFormat, Callable[[str, str, str], CompanionValue]] = {
    "shell": _read_shell,
    "cmake": _read_cmake,
    "python": _read_python,
    "yaml": _read_yaml,
}

__all__ = ["CompanionError", "CompanionValue", "read_companion", "set_companion"]
