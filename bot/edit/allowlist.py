"""Read and edit the torch stable-ABI allowlist of vLLM's CI check script.

Longer than 400 lines because it re-implements one ruff layout rule set for one
tuple, and the rules below only make sense next to the code that applies them.

The allowlist is a module-level tuple of string literals
(``ALLOWED_UNSTABLE_LIBRARIES: tuple[str, ...] = (...)`` in
``.buildkite/check-torch-abi.py``). It is read with :mod:`ast`, never executed.

Edits remove entries or replace one with narrower ones. The file is kept
``ruff format``-clean, because vLLM's pre-commit runs ruff on it and a bot PR
that fails pre-commit is worse than none. Only the tuple's own text changes,
rendered the way ruff renders it; every rule below was checked against
``ruff format`` (see ``tests/allowlist``):

- one entry per line (4-space indent, trailing comma, ``)`` at column 0) while
  a *magic trailing comma* holds it open: two or more entries and a trailing
  comma in the original, or whenever a comment lives inside the parentheses;
- otherwise on one line when that line fits in ``line_length`` (``("x",)`` for
  one entry, ``()`` for none); a comment after ``)`` counts toward the width
  unless it is a pragma (``# noqa``, ``# type: ...``), as in ruff;
- entries that survive keep their literal as written (quotes, escapes) and
  their trailing comment; blank lines inside the tuple disappear, as in ruff.

Comments written above a removed entry are kept (handed to the next entry, or
left before ``)``): they may head a group of entries, and dropping a human's
prose silently is worse than leaving it for the reviewer. A removed entry's
own trailing comment goes with its line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as replaced
from types import MappingProxyType

from bot.core.errors import PermanentError
from bot.edit.cmake_pin import pin_diff

DEFAULT_VARIABLE = "ALLOWED_UNSTABLE_LIBRARIES"
# ruff's default; vLLM's own setting is not recorded in our references, so
# callers that know it pass it explicitly.
DEFAULT_LINE_LENGTH = 88

# --- user-facing messages (tests match them) -------------------------------

MSG_PARSE = "{where}: cannot parse Python: {problem}"
MSG_LONE_CR = "{filename}: uses bare CR line endings, which the bot does not edit"
MSG_NOT_FOUND = "{filename}: no module-level assignment to {variable}"
MSG_ASSIGNED_TWICE = (
    "{where}: {variable} is assigned more than once (lines {lines}); "
    "cannot tell which value the check uses"
)
MSG_FORM = (
    "{where}: {variable} is not a plain module-level assignment "
    "(`{variable} = (...)` or `{variable}: tuple[str, ...] = (...)`)"
)
MSG_NOT_TUPLE = "{where}: {variable} is not a tuple literal: `{found}`"
MSG_NOT_PARENTHESIZED = "{where}: the tuple of {variable} is not written in parentheses"
MSG_NOT_LITERAL = "{where}: entry `{found}` of {variable} is not a plain string literal"
MSG_LAYOUT = "{where}: {variable} is laid out in a way the bot cannot edit: {reason}"
MSG_UNKNOWN_PATTERN = "{where}: {variable} has no entry {patterns}"
MSG_REMOVE_AND_REPLACE = "{where}: asked to both remove and replace {patterns}"
MSG_EMPTY_REPLACEMENT = "{where}: the replacement of {pattern!r} lists no patterns"
MSG_INVALID_PATTERN = "invalid allowlist pattern {pattern!r}: it must be non-empty printable text"

# Reasons completing MSG_LAYOUT.
REASON_CODE_AFTER = "code follows the closing parenthesis on its line"
REASON_NOT_AT_START = "the assignment does not start its line, or '(' is not on its first line"
REASON_NESTED_PARENTHESES = "an entry is wrapped in its own parentheses"
REASON_EXTRA_PARENTHESES = "the tuple is wrapped in a second pair of parentheses"
REASON_TWO_COMMENTS = "an entry has comments on two lines"
REASON_MULTILINE_ENTRY = "an entry spans several lines"

_INDENT = "    "
_COMMENT_GAP = "  "  # ruff puts two spaces before a trailing comment
_NO_REPLACEMENTS: Mapping[str, Sequence[str]] = MappingProxyType({})
_LONE_CR = re.compile(r"\r(?!\n)")
_LINE_BREAK = re.compile(r"\r\n|\n")
# Comment prefixes ruff leaves out of a line's width (a "pragma" comment).
_PRAGMAS_WITH_COLON = frozenset(
    {"isort", "type", "pyright", "pyrefly", "pylint", "flake8", "ruff", "ty"}
)


class AllowlistError(PermanentError):
    """The allowlist cannot be read or edited; the message is meant for users.

    Permanent: the same file and request give the same answer.
    """


@dataclass(frozen=True)
class Allowlist:
    variable: str
    entries: tuple[str, ...]  # in file order
    start: int  # character offsets of the value (the tuple expression) in the text
    end: int
    line: int  # 1-based line of the assignment


@dataclass(frozen=True)
class _Item:
    """One entry with the comments that travel with it."""

    value: str
    source: str  # the literal as written
    leading: tuple[str, ...] = ()  # own-line comments just above it
    trailing: str | None = None  # comment after it on its line


@dataclass(frozen=True)
class _Layout:
    """What is between the tuple's parentheses, comments included."""

    opening: str | None  # comment right after "("
    items: tuple[_Item, ...]
    dangling: tuple[str, ...]  # own-line comments after the last entry
    trailing_comma: bool


# --- reading -------------------------------------------------------------------


def read_allowlist(
    text: str, *, variable: str = DEFAULT_VARIABLE, filename: str = "<text>"
) -> Allowlist:
    """Find the allowlist tuple ``variable`` in ``text`` or raise :class:`AllowlistError`."""
    return _read(text, variable, filename)[0]


def _read(text: str, variable: str, filename: str) -> tuple[Allowlist, _Layout, _Assignment]:
    if _LONE_CR.search(text):
        raise AllowlistError(MSG_LONE_CR.format(filename=filename))
    # A UTF-8 byte order mark is legal in a Python file but not in ast's input.
    origin = 1 if text.startswith("\ufeff") else 0
    source = text[origin:]
    try:
        module = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        where = f"{filename}:{exc.lineno or 1}"
        raise AllowlistError(MSG_PARSE.format(where=where, problem=exc.msg)) from None

    statement = _the_assignment(module, variable, filename)
    where = f"{filename}:{statement.line}"
    value = statement.value
    if not isinstance(value, ast.Tuple):
        found = _shorten(ast.get_source_segment(source, value) or type(value).__name__)
        raise AllowlistError(MSG_NOT_TUPLE.format(where=where, variable=variable, found=found))
    values: list[str] = []
    for element in value.elts:
        if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
            raise _not_literal(source, element, variable, filename)
        values.append(element.value)

    offsets = _LineOffsets(source)
    start = offsets.of(value.lineno, value.col_offset)
    end = offsets.of(value.end_lineno or value.lineno, value.end_col_offset or 0)
    if not source.startswith("(", start):
        raise AllowlistError(MSG_NOT_PARENTHESIZED.format(where=where, variable=variable))
    layout = _layout(source, start, end, value.elts, values, variable, filename)
    allowlist = Allowlist(
        variable=variable,
        entries=tuple(item.value for item in layout.items),
        start=origin + start,
        end=origin + end,
        line=statement.line,
    )
    return allowlist, layout, statement


def _the_assignment(module: ast.Module, variable: str, filename: str) -> _Assignment:
    """The single module-level statement binding ``variable``, which must be ``NAME = value``."""
    bindings = sorted(set(_module_bindings(module.body, variable)))
    if not bindings:
        raise AllowlistError(MSG_NOT_FOUND.format(filename=filename, variable=variable))
    where = f"{filename}:{bindings[0]}"
    if len(bindings) > 1:
        lines = ", ".join(str(line) for line in bindings)
        raise AllowlistError(MSG_ASSIGNED_TWICE.format(where=where, variable=variable, lines=lines))
    for statement in module.body:
        if statement.lineno == bindings[0]:
            assignment = _simple_assignment(statement, variable)
            if assignment is not None:
                return assignment
    raise AllowlistError(MSG_FORM.format(where=where, variable=variable))


@dataclass(frozen=True)
class _Assignment:
    line: int
    column: int  # of the statement, in UTF-8 bytes as ast counts
    value: ast.expr


def _simple_assignment(statement: ast.stmt, variable: str) -> _Assignment | None:
    """``variable = value`` or ``variable: annotation = value``, else None."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id == variable:
            return _Assignment(statement.lineno, statement.col_offset, statement.value)
    elif (
        isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.target.id == variable
        and statement.value is not None
    ):
        return _Assignment(statement.lineno, statement.col_offset, statement.value)
    return None


def _module_bindings(statements: Iterable[ast.stmt], variable: str) -> Iterable[int]:
    """Lines of every module-scope statement that (re)binds ``variable``.

    Function and class bodies are separate scopes, so they are not entered;
    ``if``/``try``/``for``/``with`` blocks at module level are.
    """
    for node in statements:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == variable:
                yield node.lineno
            continue
        if isinstance(node, ast.AnnAssign) and node.value is None:
            continue  # a bare annotation binds nothing
        for child in _walk_scope(node):
            if isinstance(child, ast.Name) and child.id == variable:
                if isinstance(child.ctx, ast.Store | ast.Del):
                    yield node.lineno
            elif isinstance(child, ast.alias) and _alias_name(child) == variable:
                yield node.lineno
            elif isinstance(child, ast.stmt):
                yield from _module_bindings([child], variable)


def _walk_scope(node: ast.AST) -> Iterable[ast.AST]:
    """``node``'s descendants in its own scope, stopping at nested statements."""
    for child in ast.iter_child_nodes(node):
        yield child
        if isinstance(child, ast.stmt | ast.Lambda | ast.comprehension):
            continue  # statements are handled (with their line) by the caller
        if isinstance(child, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            continue  # a comprehension's targets live in its own scope
        yield from _walk_scope(child)


def _alias_name(alias: ast.alias) -> str:
    return alias.asname or alias.name.split(".")[0]


def _not_literal(source: str, element: ast.expr, variable: str, filename: str) -> AllowlistError:
    found = _shorten(ast.get_source_segment(source, element) or type(element).__name__)
    where = f"{filename}:{element.lineno}"
    return AllowlistError(MSG_NOT_LITERAL.format(where=where, variable=variable, found=found))


def _shorten(source: str, limit: int = 60) -> str:
    flat = " ".join(source.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class _LineOffsets:
    """Turns ast/tokenize positions into character offsets of the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        self.starts.extend(match.end() for match in re.finditer("\n", text))

    def of(self, line: int, utf8_column: int) -> int:
        """Offset of an ast position (ast columns count UTF-8 bytes)."""
        start = self.starts[line - 1]
        # A character takes at least one byte, so this slice holds the column.
        line_bytes = self.text[start : start + utf8_column].encode("utf-8")
        return start + len(line_bytes[:utf8_column].decode("utf-8"))

    def of_token(self, position: tuple[int, int]) -> int:
        """Offset of a tokenize position (tokenize columns count characters)."""
        line, column = position
        if line > len(self.starts):  # ENDMARKER after a last line without line break
            return len(self.text)
        return self.starts[line - 1] + column


def _layout(
    source: str,
    start: int,
    end: int,
    elements: Sequence[ast.expr],
    values: Sequence[str],
    variable: str,
    filename: str,
) -> _Layout:
    """Entries and comments between the parentheses at ``source[start:end]``."""
    offsets = _LineOffsets(source)
    tokens = [
        token
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if start <= offsets.of_token(token.start) < end
    ]
    scan = _LayoutScan(source, elements, values, variable, filename, tokens[0].start[0])
    for token in tokens[1:-1]:  # without the tuple's own "(" and ")"
        if token.type == tokenize.COMMENT:
            scan.comment(token)
        elif token.type == tokenize.STRING:
            scan.entry(token)
        elif token.type == tokenize.OP and token.string == ",":
            scan.comma(token)
        elif token.type not in (tokenize.NL, tokenize.NEWLINE):
            # Only "(" and ")" get here: ast already refused anything but literals.
            raise scan.error(REASON_NESTED_PARENTHESES, token.start[0])
    return _Layout(scan.opening, tuple(scan.items), tuple(scan.pending), scan.comma_after_last)


@dataclass
class _LayoutScan:
    """What ``_layout`` has read so far of the tokens between the parentheses."""

    source: str
    elements: Sequence[ast.expr]
    values: Sequence[str]
    variable: str
    filename: str
    last_code_line: int  # line of the last "(", string or ","
    opening: str | None = None
    items: list[_Item] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # own-line comments for the next entry
    comma_after_last: bool = False

    def error(self, reason: str, line: int) -> AllowlistError:
        where = f"{self.filename}:{line}"
        return AllowlistError(MSG_LAYOUT.format(where=where, variable=self.variable, reason=reason))

    def comment(self, token: tokenize.TokenInfo) -> None:
        line = token.start[0]
        comment = token.string.rstrip()
        if line != self.last_code_line:
            self.pending.append(comment)
        elif not self.items:
            self.opening = comment
        elif self.items[-1].trailing is None:
            self.items[-1] = replaced(self.items[-1], trailing=comment)
        else:
            raise self.error(REASON_TWO_COMMENTS, line)

    def entry(self, token: tokenize.TokenInfo) -> None:
        line = token.start[0]
        if self.items and not self.comma_after_last:
            # Two literals in a row: implicit concatenation, not one plain literal.
            element = self.elements[len(self.items) - 1]
            raise _not_literal(self.source, element, self.variable, self.filename)
        if token.end[0] != line:
            raise self.error(REASON_MULTILINE_ENTRY, line)
        value = self.values[len(self.items)]
        self.items.append(_Item(value, token.string, leading=tuple(self.pending)))
        self.pending = []
        self.comma_after_last = False
        self.last_code_line = line

    def comma(self, token: tokenize.TokenInfo) -> None:
        self.comma_after_last = True
        self.last_code_line = token.start[0]


# --- editing -------------------------------------------------------------------


def edit_allowlist(
    text: str,
    *,
    variable: str = DEFAULT_VARIABLE,
    remove: Collection[str] = (),
    replace: Mapping[str, Sequence[str]] = _NO_REPLACEMENTS,
    filename: str = "<text>",
    line_length: int = DEFAULT_LINE_LENGTH,
) -> str:
    """Return ``text`` with entries removed and others replaced by narrower patterns.

    Replacements take the replaced entry's place, in the order given. A
    pattern that ends up listed twice is kept once (the first). Raises
    :class:`AllowlistError` for a pattern that is not in the allowlist, a
    pattern both removed and replaced, or a file the editor cannot handle.
    """
    allowlist, layout, statement = _read(text, variable, filename)
    where = f"{filename}:{allowlist.line}"
    _check_request(allowlist, remove, replace, where)
    items, dangling = _apply(layout, frozenset(remove), replace)
    if items == layout.items and dangling == layout.dangling:
        return text

    prefix, comment_after = _surroundings(text, allowlist, statement, where)
    edited = replaced(layout, items=items, dangling=dangling)
    flat = _flat(edited)
    if flat is not None and _line_width(prefix, flat, comment_after) <= line_length:
        rendered = flat
    else:
        rendered = _expanded(edited, _newline_of(text))
    return text[: allowlist.start] + rendered + text[allowlist.end :]


def _surroundings(
    text: str, allowlist: Allowlist, statement: _Assignment, where: str
) -> tuple[str, str]:
    """What shares a line with the tuple: ``NAME... = `` before it, a comment after it.

    Refuses shapes where re-rendering the tuple would also have to move code
    around it (ruff would do that, this editor does not).
    """

    def refuse(reason: str) -> AllowlistError:
        variable = allowlist.variable
        return AllowlistError(MSG_LAYOUT.format(where=where, variable=variable, reason=reason))

    line_start = text.rfind("\n", 0, allowlist.start) + 1
    if statement.column != 0 or statement.line != text.count("\n", 0, allowlist.start) + 1:
        raise refuse(REASON_NOT_AT_START)
    prefix = text[line_start : allowlist.start].lstrip("\ufeff")
    if not prefix.rstrip().endswith("="):
        raise refuse(REASON_EXTRA_PARENTHESES)
    line_end = _LINE_BREAK.search(text, allowlist.end)
    after = text[allowlist.end : line_end.start() if line_end else len(text)].strip()
    if after and not after.startswith("#"):
        raise refuse(REASON_CODE_AFTER)
    return prefix, after


def _line_width(prefix: str, flat: str, comment_after: str) -> int:
    width = _width(prefix) + _width(flat)
    return width + _comment_width(comment_after) if comment_after else width


def allowlist_diff(old: str, new: str, path: str) -> str:
    """Unified diff of ``old`` → ``new`` as ``git diff`` shows it; ``""`` when equal."""
    return pin_diff(old, new, path)


def python_literal(pattern: str) -> str:
    """``pattern`` as the string literal ruff would write: double quotes unless
    single quotes need fewer escapes."""
    quote = "'" if pattern.count('"') > pattern.count("'") else '"'
    escaped = pattern.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return quote + escaped + quote


def _check_request(
    allowlist: Allowlist,
    remove: Collection[str],
    replace: Mapping[str, Sequence[str]],
    where: str,
) -> None:
    variable = allowlist.variable
    asked = [*remove, *(pattern for pattern in replace if pattern not in remove)]
    unknown = [pattern for pattern in dict.fromkeys(asked) if pattern not in allowlist.entries]
    if unknown:
        patterns = ", ".join(repr(pattern) for pattern in unknown)
        raise AllowlistError(
            MSG_UNKNOWN_PATTERN.format(where=where, variable=variable, patterns=patterns)
        )
    both = [pattern for pattern in dict.fromkeys(remove) if pattern in replace]
    if both:
        patterns = ", ".join(repr(pattern) for pattern in both)
        raise AllowlistError(MSG_REMOVE_AND_REPLACE.format(where=where, patterns=patterns))
    for pattern, narrower in replace.items():
        if not narrower:
            raise AllowlistError(MSG_EMPTY_REPLACEMENT.format(where=where, pattern=pattern))
        for new in narrower:
            if not new or not new.isprintable():
                raise AllowlistError(MSG_INVALID_PATTERN.format(pattern=new))


def _apply(
    layout: _Layout, remove: Collection[str], replace: Mapping[str, Sequence[str]]
) -> tuple[tuple[_Item, ...], tuple[str, ...]]:
    """The edited entries, and the comments left dangling before ``)``."""
    kept: list[_Item] = []
    carried: list[str] = []  # comments of dropped entries, for the next kept one
    seen: set[str] = set()
    introduced: set[str] = set()  # values a replacement brought in

    def keep(item: _Item, *, new: bool) -> None:
        # Duplicates are dropped only when a replacement caused them: entries
        # the file already repeats are not this edit's business.
        if item.value in seen and (new or item.value in introduced):
            carried.extend(item.leading)
            return
        kept.append(replaced(item, leading=(*carried, *item.leading)))
        carried.clear()
        seen.add(item.value)
        if new:
            introduced.add(item.value)

    for item in layout.items:
        if item.value in remove:
            carried.extend(item.leading)
        elif item.value in replace:
            for index, pattern in enumerate(replace[item.value]):
                same = pattern == item.value
                source = item.source if same else python_literal(pattern)
                if index == 0:  # the first replacement inherits the entry's comments
                    keep(replaced(item, value=pattern, source=source), new=not same)
                else:
                    keep(_Item(pattern, source), new=not same)
        else:
            keep(item, new=False)
    return tuple(kept), (*carried, *layout.dangling)


def _flat(layout: _Layout) -> str | None:
    """The one-line form, or None when ruff would keep the tuple split."""
    has_comments = (
        layout.opening is not None
        or bool(layout.dangling)
        or any(item.leading or item.trailing for item in layout.items)
    )
    magic_trailing_comma = layout.trailing_comma and len(layout.items) > 1
    if has_comments or magic_trailing_comma:
        return None
    sources = [item.source for item in layout.items]
    if len(sources) == 1:
        return f"({sources[0]},)"
    return "(" + ", ".join(sources) + ")"


def _expanded(layout: _Layout, newline: str) -> str:
    first = "(" if layout.opening is None else f"({_COMMENT_GAP}{layout.opening}"
    lines = [first]
    for item in layout.items:
        lines.extend(_INDENT + comment for comment in item.leading)
        entry = f"{_INDENT}{item.source},"
        lines.append(entry if item.trailing is None else entry + _COMMENT_GAP + item.trailing)
    lines.extend(_INDENT + comment for comment in layout.dangling)
    lines.append(")")
    return newline.join(lines)


def _newline_of(text: str) -> str:
    """The file's line ending, chosen as ruff does: the first one in the file."""
    match = _LINE_BREAK.search(text)
    return match.group() if match else "\n"


def _width(text: str) -> int:
    """Display width of ``text`` in columns (wide East Asian characters count 2)."""
    total = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total


def _comment_width(comment: str) -> int:
    """Columns a trailing comment adds to its line, as ruff measures them.

    ruff leaves pragma comments (``# noqa``, ``# type: ignore``...) out of the
    width, including a pragma that ends a longer comment.
    """
    for index, char in enumerate(comment):
        if char == "#" and _is_pragma(comment[index:]):
            prose = comment[:index].rstrip()
            return _width(_COMMENT_GAP + prose) if prose else 0
    return _width(_COMMENT_GAP + comment)


def _is_pragma(comment: str) -> bool:
    content = comment[1:].lstrip()
    if content[:4].lower() == "noqa" or content.startswith("nosec"):
        return True
    prefix, colon, _ = content.partition(":")
    return bool(colon) and prefix in _PRAGMAS_WITH_COLON
