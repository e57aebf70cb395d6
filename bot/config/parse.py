"""Reading the repository's own settings for the bot: ``.github/followup-bot.yml``.

The file is read in three passes so that a maintainer sees *every* mistake at
once, each pointing at the exact line and column:

1. PyYAML composes the text into nodes (safe loader only, so nothing in the
   file is ever executed). We walk the nodes ourselves rather than let PyYAML
   construct objects, because construction silently keeps the last of two
   duplicate keys and forgets where each value came from.
2. The frozen pydantic models of ``models`` check types, required keys and
   value formats, and are the result the rest of the bot uses.
3. Cross-item rules (unique pin names, one pin per dependency) and sections
   that need another section are checked.

Parsing is CPU work on up to 256 KB of text: async callers should run it
through ``BlockingRunner`` rather than on the event loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeAlias

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails
from yaml.constructor import SafeConstructor
from yaml.error import Mark, MarkedYAMLError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from bot.config.errors import ConfigError, ConfigProblem, describe, message_for, problem_at
from bot.config.messages import (
    MSG_ALLOWLIST_NEEDS_EVIDENCE,
    MSG_BAD_SCALAR,
    MSG_COMPANION_IS_PIN_FILE,
    MSG_DUPLICATE_DEPENDENCY,
    MSG_DUPLICATE_KEY,
    MSG_DUPLICATE_MIGRATION,
    MSG_DUPLICATE_PIN,
    MSG_EMPTY_CONFIG,
    MSG_KEY_NOT_STRING,
    MSG_MAIN_RED_NEEDS_BUILDKITE,
    MSG_MAIN_RED_UNKNOWN_PIPELINE,
    MSG_NOT_UTF8,
    MSG_RETRY_NEEDS_BUILDKITE,
    MSG_TOO_DEEP,
    MSG_TOO_LARGE,
    MSG_TOO_MANY_VALUES,
    MSG_TOP_NOT_MAPPING,
    MSG_UNSUPPORTED_TAG,
    MSG_YAML_SYNTAX,
)
from bot.config.models import RepoConfig

CONFIG_PATH = ".github/followup-bot.yml"
MAX_CONFIG_BYTES = 256 * 1024
# A real config has a few hundred values; the cap stops alias bombs
# ("billion laughs") from expanding into millions of objects.
MAX_VALUES = 20_000
MAX_DEPTH = 32


# --- pass 1: YAML nodes -> plain data, remembering where each value came from ------

_FieldPath: TypeAlias = tuple[str | int, ...]
_YAML_TAG = "tag:yaml.org,2002:"
_MAP_TAG = _YAML_TAG + "map"
_SEQ_TAG = _YAML_TAG + "seq"
_SCALAR_TAGS = frozenset(
    _YAML_TAG + name for name in ("str", "int", "float", "bool", "null", "timestamp")
)
# `<<` and `=` resolve to these; we have no use for merge keys, so keep the text.
_VERBATIM_TAGS = frozenset({_YAML_TAG + "merge", _YAML_TAG + "value"})


@dataclass(frozen=True)
class _Where:
    key: Mark | None  # the key's position; None for list items and the document
    value: Mark


class _TooComplex(Exception):
    """The document is deeper or larger than any real config."""

    def __init__(self, message: str, mark: Mark) -> None:
        super().__init__(message)
        self.mark = mark


class _DataBuilder:
    """Turns composed nodes into dicts/tuples/scalars, collecting problems on the way.

    Sequences become tuples, the type the models' (strict) sequence fields take.
    """

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.problems: list[ConfigProblem] = []
        self.where: dict[_FieldPath, _Where] = {}
        # Paths already reported here: pydantic would only repeat them less clearly.
        self.reported: set[_FieldPath] = set()
        self._values = 0
        self._scalars = SafeConstructor()

    def note(self, mark: Mark, path: _FieldPath, message: str) -> None:
        self.problems.append(problem_at(self.filename, mark, path, message))

    def refuse(self, node: Node, path: _FieldPath, message: str) -> None:
        """Report a value we will not use (it is replaced by null)."""
        self.note(node.start_mark, path, message)
        self.reported.add(path)

    def build(self, node: Node, path: _FieldPath, key: Mark | None) -> object:
        self._values += 1
        if self._values > MAX_VALUES:
            raise _TooComplex(MSG_TOO_MANY_VALUES.format(limit=MAX_VALUES), node.start_mark)
        if len(path) > MAX_DEPTH:
            raise _TooComplex(MSG_TOO_DEEP.format(limit=MAX_DEPTH), node.start_mark)
        self.where.setdefault(path, _Where(key, node.start_mark))
        if isinstance(node, MappingNode) and node.tag == _MAP_TAG:
            return self._mapping(node, path)
        if isinstance(node, SequenceNode) and node.tag == _SEQ_TAG:
            return tuple(self.build(item, (*path, i), None) for i, item in enumerate(node.value))
        if isinstance(node, ScalarNode) and node.tag in _VERBATIM_TAGS:
            return node.value
        if isinstance(node, ScalarNode) and node.tag in _SCALAR_TAGS:
            return self._scalar(node, path)
        self.refuse(node, path, MSG_UNSUPPORTED_TAG.format(tag=_short_tag(node.tag)))
        return None

    def _scalar(self, node: ScalarNode, path: _FieldPath) -> object:
        try:
            return self._scalars.construct_object(node, deep=True)
        except (ValueError, yaml.YAMLError) as exc:  # e.g. the "date" 2024-13-45
            self.refuse(node, path, MSG_BAD_SCALAR.format(raw=node.value, reason=exc))
            return None

    def _mapping(self, node: MappingNode, path: _FieldPath) -> dict[str, object]:
        result: dict[str, object] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                kind = "a list" if isinstance(key_node, SequenceNode) else "a mapping"
                self.note(key_node.start_mark, path, MSG_KEY_NOT_STRING.format(kind=kind))
                continue
            # Keys are taken as written: `on:` is the key "on", not YAML 1.1's True.
            key = key_node.value
            if key in first_line:
                message = MSG_DUPLICATE_KEY.format(key=key, line=first_line[key])
                self.note(key_node.start_mark, (*path, key), message)
                continue
            first_line[key] = key_node.start_mark.line + 1
            result[key] = self.build(value_node, (*path, key), key_node.start_mark)
        return result


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_YAML_TAG) if tag.startswith(_YAML_TAG) else tag


# libyaml's parser and composer where PyYAML has them (its wheels do): the same nodes and
# marks (they count characters in both), several times faster.
_Loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)
# libyaml refuses nesting past its own limit (1000 levels) with this problem; PyYAML's
# Python parser runs out of stack instead (RecursionError). Both say MSG_TOO_DEEP.
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


def _nodes(text: str) -> Node | None:
    try:
        return yaml.compose(text, Loader=_Loader)
    except MarkedYAMLError as exc:
        if exc.problem == _LIBYAML_TOO_DEEP:
            raise RecursionError(exc.problem) from None
    # libyaml words its errors its own way: PyYAML's Python parser finds the same mistake at
    # the same place and says it in the words maintainers have been shown so far (only a
    # file with a mistake is read twice).
    return yaml.compose(text, Loader=yaml.SafeLoader)


def _compose(text: str, filename: str) -> Node | None:
    try:
        # Characters YAML refuses are found up front, by their index in the text (libyaml
        # would count bytes of UTF-8).
        yaml.reader.Reader(text)
        return _nodes(text)
    except MarkedYAMLError as exc:
        problem = exc.problem or "invalid YAML"
        if exc.context:
            problem = f"{exc.context}, {problem}"
        message = MSG_YAML_SYNTAX.format(problem=problem)
        raise ConfigError([problem_at(filename, exc.problem_mark, (), message)]) from None
    except ReaderError as exc:  # control characters; carries an offset, not a mark
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        message = MSG_YAML_SYNTAX.format(problem=f"{exc.reason} (U+{code:04X})")
        raise ConfigError([ConfigProblem(filename, line, column, "", message)]) from None
    except RecursionError:
        message = MSG_TOO_DEEP.format(limit=MAX_DEPTH)
        raise ConfigError([ConfigProblem(filename, None, None, "", message)]) from None


# --- pass 2: pydantic errors -> located problems -----------------------------------


def _locate(error: ErrorDetails, where: dict[_FieldPath, _Where]) -> Mark | None:
    loc: _FieldPath = tuple(error["loc"])
    if error["type"] == "extra_forbidden" and loc in where:
        return where[loc].key
    # The deepest node the file has: a missing key's error points at the mapping lacking it.
    while loc not in where and loc:
        loc = loc[:-1]
    return where[loc].value if loc in where else None


def _already_reported(error: ErrorDetails, reported: set[_FieldPath]) -> bool:
    # An unknown key is a mistake of its own, whatever is wrong with its value.
    if error["type"] == "extra_forbidden":
        return False
    path = tuple(error["loc"])
    return any(path[: len(done)] == done for done in reported)


# --- pass 3: cross-item rules ---------------------------------------------------------


def _pin_problems(config: RepoConfig, builder: _DataBuilder) -> Iterator[ConfigProblem]:
    names: dict[str, int] = {}
    dependencies: dict[tuple[str, str], int] = {}
    for index, pin in enumerate(config.pins):
        # casefold: refs differing only in case collide on macOS/Windows clones.
        first = names.setdefault(pin.name.casefold(), index)
        if first != index:
            path: _FieldPath = ("pins", index, "name")
            message = MSG_DUPLICATE_PIN.format(name=pin.name, index=first)
            yield problem_at(builder.filename, builder.where[path].value, path, message)
        for number, companion in enumerate(pin.also):
            if companion.file == pin.file:
                path = ("pins", index, "also", number, "file")
                message = MSG_COMPANION_IS_PIN_FILE.format(file=pin.file)
                yield problem_at(builder.filename, builder.where[path].value, path, message)
        first = dependencies.setdefault((pin.file, pin.dependency), index)
        if first != index:
            path = ("pins", index, "dependency")
            message = MSG_DUPLICATE_DEPENDENCY.format(
                index=first, dependency=pin.dependency, file=pin.file
            )
            yield problem_at(builder.filename, builder.where[path].value, path, message)


def _migration_problems(config: RepoConfig, builder: _DataBuilder) -> Iterator[ConfigProblem]:
    names: dict[str, int] = {}
    for index, migration in enumerate(config.migrations):
        first = names.setdefault(migration.name.casefold(), index)
        if first != index:
            path: _FieldPath = ("migrations", index, "name")
            message = MSG_DUPLICATE_MIGRATION.format(name=migration.name, index=first)
            yield problem_at(builder.filename, builder.where[path].value, path, message)


def _section_problems(
    config: RepoConfig, data: dict[str, object], builder: _DataBuilder
) -> Iterator[ConfigProblem]:
    """Sections that would do nothing without another one (a silent no-op otherwise)."""
    if config.buildkite is not None:
        yield from _main_red_pipelines(config, builder)
        return
    if config.main_red is not None:
        where = builder.where[("main_red",)]
        mark = where.key or where.value
        yield problem_at(builder.filename, mark, ("main_red",), MSG_MAIN_RED_NEEDS_BUILDKITE)
    # `retry` has its defaults when left out, so whether it was written is in the file.
    if data.get("retry") is not None:
        where = builder.where[("retry",)]
        mark = where.key or where.value
        yield problem_at(builder.filename, mark, ("retry",), MSG_RETRY_NEEDS_BUILDKITE)
    if config.allowlist is not None and config.allowlist.wheel_url is None:
        where = builder.where[("allowlist",)]
        mark = where.key or where.value
        yield problem_at(builder.filename, mark, ("allowlist",), MSG_ALLOWLIST_NEEDS_EVIDENCE)


def _main_red_pipelines(config: RepoConfig, builder: _DataBuilder) -> Iterator[ConfigProblem]:
    known = config.buildkite.pipelines if config.buildkite is not None else ()
    watched = config.main_red.pipelines if config.main_red is not None else ()
    for index, pipeline in enumerate(watched):
        if pipeline not in known:
            path: _FieldPath = ("main_red", "pipelines", index)
            message = MSG_MAIN_RED_UNKNOWN_PIPELINE.format(pipeline=pipeline)
            yield problem_at(builder.filename, builder.where[path].value, path, message)


# --- entry points ---------------------------------------------------------------------


def _too_large(filename: str) -> ConfigError:
    message = MSG_TOO_LARGE.format(limit=MAX_CONFIG_BYTES)
    return ConfigError([ConfigProblem(filename, None, None, "", message)])


def parse_repo_config(text: str, *, filename: str = CONFIG_PATH) -> RepoConfig:
    """Parse and validate the config text; ``ConfigError`` lists every problem."""
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_CONFIG_BYTES:
        raise _too_large(filename)
    root = _compose(text, filename)
    if root is None or (isinstance(root, ScalarNode) and root.tag == _YAML_TAG + "null"):
        raise ConfigError([ConfigProblem(filename, 1, 1, "", MSG_EMPTY_CONFIG)])

    builder = _DataBuilder(filename)
    try:
        data = builder.build(root, (), None)
    except _TooComplex as exc:
        raise ConfigError([problem_at(filename, exc.mark, (), str(exc))]) from None
    problems = builder.problems
    if not isinstance(data, dict):
        if not builder.reported:
            message = MSG_TOP_NOT_MAPPING.format(kind=describe(data))
            problems.append(problem_at(filename, root.start_mark, (), message))
        raise ConfigError(problems)
    try:
        config = RepoConfig.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            if not _already_reported(error, builder.reported):
                mark = _locate(error, builder.where)
                problems.append(problem_at(filename, mark, error["loc"], message_for(error)))
        raise ConfigError(problems) from None
    problems.extend(_pin_problems(config, builder))
    problems.extend(_migration_problems(config, builder))
    problems.extend(_section_problems(config, data, builder))
    if problems:
        raise ConfigError(problems)
    return config


def parse_repo_config_bytes(data: bytes, *, filename: str = CONFIG_PATH) -> RepoConfig:
    """Like ``parse_repo_config`` for raw file contents (the contents API, a file)."""
    if len(data) > MAX_CONFIG_BYTES:
        raise _too_large(filename)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        message = MSG_NOT_UTF8.format(reason=exc.reason)
        raise ConfigError([ConfigProblem(filename, line, column, "", message)]) from None
    return parse_repo_config(text.removeprefix("\ufeff"), filename=filename)
