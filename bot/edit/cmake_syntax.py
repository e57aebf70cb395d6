"""A small CMake tokenizer: the command invocations of a file, comments dropped.

It follows the cmake-language(7) grammar closely enough for editing pins: line and
bracket comments, quoted arguments with escapes, bracket arguments, unquoted
arguments (``${VAR}`` is just text there) and nested parentheses. Every argument
keeps its offsets in the file, so an editor can replace exactly one token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

_WHITESPACE = " \t\r\n\f\v"
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

ArgumentKind = Literal["unquoted", "quoted", "bracket", "paren"]


@dataclass(frozen=True)
class Argument:
    kind: ArgumentKind
    text: str  # source text between the delimiters, escapes left as written
    start: int  # offsets of ``text`` in the file
    end: int


@dataclass(frozen=True)
class Command:
    name: str
    start: int  # offset of the command name
    arguments: tuple[Argument, ...]


class CMakeSyntaxError(Exception):
    """The text is not CMake; ``offset`` is where the tokenizer gave up."""

    def __init__(self, problem: str, offset: int) -> None:
        super().__init__(problem)
        self.problem = problem
        self.offset = offset


class _Lexer:
    """Splits a CMake file into command invocations (comments dropped)."""

    def __init__(self, text: str) -> None:
        self.text = text
        # A UTF-8 byte order mark is allowed at the start of a CMake file.
        self.pos = 1 if text.startswith("\ufeff") else 0

    def commands(self) -> Iterator[Command]:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in _WHITESPACE:
                self.pos += 1
            elif char == "#":
                self._skip_comment()
            else:
                yield self._command()

    def _command(self) -> Command:
        match = _IDENTIFIER.match(self.text, self.pos)
        if match is None:
            raise CMakeSyntaxError(f"unexpected {self.text[self.pos]!r}", self.pos)
        start = self.pos
        self.pos = match.end()
        # CMake allows only blanks between a command name and its '('.
        while self.text.startswith((" ", "\t"), self.pos):
            self.pos += 1
        if not self.text.startswith("(", self.pos):
            raise CMakeSyntaxError(f"expected '(' after {match.group()!r}", start)
        self.pos += 1
        return Command(match.group(), start, self._arguments(start))

    def _arguments(self, command_start: int) -> tuple[Argument, ...]:
        text = self.text
        arguments: list[Argument] = []
        depth = 1
        while True:
            if self.pos >= len(text):
                raise CMakeSyntaxError("unterminated command (missing ')')", command_start)
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
                arguments.append(Argument("paren", char, self.pos - 1, self.pos))
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

    def _bracket(self, opening: re.Match[str], what: str = "bracket argument") -> Argument:
        closing = "]" + opening.group(1) + "]"
        end = self.text.find(closing, opening.end())
        if end < 0:
            raise CMakeSyntaxError(f"unterminated {what}", opening.start())
        self.pos = end + len(closing)
        return Argument("bracket", self.text[opening.end() : end], opening.end(), end)

    def _quoted(self) -> Argument:
        text = self.text
        start = self.pos + 1
        pos = start
        while pos < len(text):
            char = text[pos]
            if char == "\\":
                pos += 2
            elif char == '"':
                self.pos = pos + 1
                return Argument("quoted", text[start:pos], start, pos)
            else:
                pos += 1
        raise CMakeSyntaxError("unterminated quoted argument", self.pos)

    def _unquoted(self) -> Argument:
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
        return Argument("unquoted", text[start:pos], start, pos)


def parse_commands(text: str) -> list[Command]:
    """The command invocations of ``text`` in file order; :class:`CMakeSyntaxError` if broken."""
    return list(_Lexer(text).commands())


def line_of(text: str, offset: int) -> int:
    """The 1-based line of ``offset`` in ``text``."""
    return text.count("\n", 0, offset) + 1


__all__ = ["Argument", "ArgumentKind", "CMakeSyntaxError", "Command", "line_of", "parse_commands"]
