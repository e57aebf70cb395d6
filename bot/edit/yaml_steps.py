"""Add or change keys of one step in a vLLM CI job file (``.buildkite/test_areas/*.yaml``).

A migration PR (for instance ``device: l4`` + ``num_devices: 1`` on the 1-GPU L4
steps) must show reviewers only the lines it needs: every other byte of the file
(comments, key order, quoting, blank lines) stays as written. So the file is
never re-dumped: PyYAML's composer gives the marks of each node and the editor
splices text at those offsets.

A *step* is a block mapping that is an item of a block sequence held by a key
named ``steps`` (at any depth, so both ``test_areas`` files and the old single
pipeline file qualify). It is identified by the 1-based line of its first key,
the line that reads ``- label: ...`` (or ``- key: ...``). A line is what a
reviewer sees and what the pipeline generator's errors point at; callers that
know a step by its ``key`` or ``label`` get its line from :func:`find_step`,
and :func:`set_steps_keys` edits several steps of one file bottom-up so that the
lines of the steps still to edit do not move.

Editing rules:

- a key that already reads as the wanted value (same type too: ``1`` is not
  ``"1"`` nor ``true``) is left alone, even when it comes from a ``<<`` merge;
- a key with another value gets only the value's characters replaced; a quoted
  string value keeps its quotes when the new string fits in them;
- a missing key becomes a new line ``<indent>key: value`` at the step's
  indentation, right after the step's *head*: the run of one-line ``key: value``
  pairs the step starts with (``label``, ``key``, ``timeout_in_minutes``...),
  before its first nested block (``source_file_dependencies:``, ``commands:``).
  Comments above the first nested block stay attached to it. Several new keys
  keep the order of ``values``;
- values are written as vLLM's files write them: ``true``/``false``, plain
  integers, plain strings (``l4``), double quotes (single ones when the text has
  ``"``) only when a plain string would read as something else (``"1"``, ``"yes"``).

Whenever the file or the step is in a shape the bot cannot edit with certainty
:class:`StepEditError` says why. As a last guard the edited text is parsed again
and must read as the old document plus exactly the changes (this also catches a
step shared through an anchor, whose copies would change too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from bot.core.errors import PermanentError
from bot.edit import yaml_parse
from bot.edit.cmake_pin import pin_diff

# --- user-facing messages (tests match them) -------------------------------

MSG_PARSE = "{filename}: cannot parse YAML: {problem}"
MSG_TABS = "{filename}:{line}: indented with a tab, which YAML does not allow"
MSG_LONE_CR = "{filename}: uses bare CR line endings, which the bot does not edit"
MSG_MIXED_NEWLINES = "{filename}: mixes CRLF and LF line endings, which the bot does not edit"
MSG_RECURSIVE = "{filename}: an alias sits inside its own anchor, which the bot does not edit"
MSG_STEP_NOT_FOUND = "{filename}:{line}: no step starts on this line (steps start on lines {lines})"
MSG_FLOW_STEP = (
    "{where}: the step is written in flow style (`- {{...}}`), which the bot does not edit"
)
MSG_STEP_FORM = (
    "{where}: the step does not start with `- key: value` on one line "
    "(an anchor or a tag before it, or its first key on the next line)"
)
MSG_DUPLICATE_KEY = (
    "{where}: key {key!r} appears more than once in the step (lines {lines}); "
    "cannot tell which one to edit"
)
MSG_VALUE_FORM = "{where}: the value of {key!r} (line {line}) cannot be edited: {reason}"
MSG_NO_PLACE = (
    "{where}: the step's first key is not a one-line `key: value`, so there is no place "
    "to add {keys}"
)
MSG_INVALID_KEY = "invalid step key {key!r}: the bot writes keys of letters, digits and '_'"
MSG_INVALID_VALUE = (
    "invalid value {value!r} for {key!r}: the bot writes one-line printable ASCII text, "
    "integers and booleans"
)
MSG_NOT_READ_BACK = "{where}: after the edit the file would not read back as intended: {problem}"
MSG_NAME_NOT_FOUND = "{filename}: no step has the key or label {name!r}"
MSG_NAME_AMBIGUOUS = "{filename}: steps on lines {lines} all have the key or label {name!r}"
# Completes MSG_STEP_NOT_FOUND when the file has no step at all.
NOTHING = "none"

# Reasons completing MSG_VALUE_FORM / MSG_NOT_READ_BACK.
REASON_COLLECTION = "it is a {kind}, not a single value"
REASON_ALIAS = "it is an alias of a value set elsewhere"
REASON_BLOCK = "it is a block scalar ('|' or '>')"
REASON_FORM = "it has an anchor, a tag or escapes, or spans lines"
REASON_EMPTY = "it is empty"
REASON_OTHER_DATA = "the document would differ from the old one plus the changes"

Value = str | int | bool
_Path = tuple[str | int, ...]
_Pair = tuple[yaml.Node, yaml.Node]
_Edit = tuple[int, int, str]  # replace text[start:end] with the string

_STR = "tag:yaml.org,2002:str"
_KINDS: dict[type[yaml.Node], str] = {yaml.MappingNode: "mapping", yaml.SequenceNode: "sequence"}
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Plain strings the bot writes: no indicator first, no ': ' or ' #' possible.
_PLAIN = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./+@-]*")
# Printable ASCII that needs no escape inside each kind of quotes.
_INSIDE_QUOTES = {'"': re.compile(r"[ !#-\[\]-~]*"), "'": re.compile(r"[ -&(-~]*")}
_DASH = re.compile(r" *- +")
_LONE_CR = re.compile(r"\r(?!\n)")
_LONE_LF = re.compile(r"(?<!\r)\n")


class StepEditError(PermanentError):
    """The step cannot be edited with certainty; the message is meant for users.

    Permanent: the same file and request give the same answer.
    """


@dataclass(frozen=True)
class StepRef:
    """A step of a job file: ``line`` is the 1-based line of its ``- label:`` line."""

    file: str
    line: int


@dataclass(frozen=True)
class _Step:
    node: yaml.MappingNode
    path: _Path  # where the step's data sits in the loaded document
    where: str  # "file:line" for messages


def steps_diff(old: str, new: str, path: str) -> str:
    """Unified diff of ``old`` → ``new`` as ``git diff`` shows it; ``""`` when equal."""
    return pin_diff(old, new, path)


def find_step(text: str, name: str, *, filename: str) -> StepRef:
    """The one step whose ``key`` or ``label`` is exactly ``name``.

    Derived keys (from the label) are not matched: the generator's rule for
    them is not something the bot can reproduce with certainty.
    """
    root, _ = _load(text, filename)
    distinct = sorted(
        {
            node.start_mark.line + 1
            for node, _ in _steps(root, (), (), filename, under_steps=False)
            if any(_names(key, value, name) for key, value in node.value)
        }
    )
    if not distinct:
        raise StepEditError(MSG_NAME_NOT_FOUND.format(filename=filename, name=name))
    if len(distinct) > 1:
        message = MSG_NAME_AMBIGUOUS.format(filename=filename, lines=_join(distinct), name=name)
        raise StepEditError(message)
    return StepRef(filename, distinct[0])


def _names(key: yaml.Node, value: yaml.Node, name: str) -> bool:
    return (
        key.value in ("key", "label") and isinstance(value, yaml.ScalarNode) and value.value == name
    )


def set_steps_keys(text: str, edits: Mapping[int, Mapping[str, Value]], *, filename: str) -> str:
    """Apply :func:`set_step_keys` to several steps (keyed by line) of one file.

    From the last step up: an edit only moves the lines below it, already edited.
    """
    for line in sorted(edits, reverse=True):
        text = set_step_keys(text, line, edits[line], filename=filename)
    return text


def set_step_keys(text: str, step_line: int, values: Mapping[str, Value], *, filename: str) -> str:
    """Return ``text`` with the step starting on ``step_line`` holding ``values``.

    Unchanged text when the step already holds them all; see the module's rules.
    """
    rendered = {key: _render(key, value) for key, value in values.items()}
    newline = _newline(text, filename)
    root, data = _load(text, filename)
    step = _find(text, root, step_line, filename)
    pairs = {key: _only_pair(step, key) for key in values}
    # The typed tree is rebuilt for every use of an alias, so it shares nothing:
    # changing the step in it leaves any other copy of the step as it was.
    expected = _typed(data)
    current = _at(expected, step.path)
    changes = {key: v for key, v in values.items() if current.get(_typed(key)) != _typed(v)}
    if not changes:
        return text
    edits: list[_Edit] = []
    missing: dict[str, str] = {}
    for key, value in changes.items():
        pair = pairs[key]
        if pair is None:
            missing[key] = rendered[key]
        else:
            edits.append(_replacement(text, pair, value, step.where))
        current[_typed(key)] = _typed(value)
    if missing:
        edits.append(_insertion(text, step, missing, newline))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    _check(text, expected, step.where)
    return text


# --- reading ---------------------------------------------------------------------


def _load(text: str, filename: str) -> tuple[yaml.Node | None, object]:
    try:
        return yaml_parse.parsed(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # PyYAML's own words for a tab ("cannot start any token") hide the cause.
        if mark is not None and text[mark.index : mark.index + 1] == "\t":
            raise StepEditError(MSG_TABS.format(filename=filename, line=mark.line + 1)) from None
        problem = " ".join(str(exc).split())
        raise StepEditError(MSG_PARSE.format(filename=filename, problem=problem)) from None


def _newline(text: str, filename: str) -> str:
    """The file's line break, which the new lines must use too."""
    if _LONE_CR.search(text):
        raise StepEditError(MSG_LONE_CR.format(filename=filename))
    if "\r\n" not in text:
        return "\n"
    if _LONE_LF.search(text):
        raise StepEditError(MSG_MIXED_NEWLINES.format(filename=filename))
    return "\r\n"


def _steps(
    node: yaml.Node | None,
    path: _Path,
    ancestors: tuple[yaml.Node, ...],
    filename: str,
    *,
    under_steps: bool,
) -> Iterator[tuple[yaml.MappingNode, _Path]]:
    """Every step mapping with its path in the loaded data (aliased ones once per use)."""
    if any(node is ancestor for ancestor in ancestors):
        raise StepEditError(MSG_RECURSIVE.format(filename=filename))
    inner = (*ancestors, node) if node is not None else ancestors
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            if under_steps and isinstance(item, yaml.MappingNode):
                yield item, (*path, index)
            yield from _steps(item, (*path, index), inner, filename, under_steps=False)
    elif isinstance(node, yaml.MappingNode):
        # The loader keeps the last of duplicate keys, and only string keys can
        # be followed into the loaded data (a `<<` merge is not a string key).
        children = {k.value: v for k, v in node.value if k.tag == _STR}
        for name, child in children.items():
            yield from _steps(child, (*path, name), inner, filename, under_steps=name == "steps")


def _only_pair(step: _Step, key: str) -> _Pair | None:
    """The step's (key, value) nodes for ``key``, if it has them."""
    pairs = [(k, v) for k, v in step.node.value if k.value == key]
    if len(pairs) > 1:
        lines = _join(k.start_mark.line + 1 for k, _ in pairs)
        raise StepEditError(MSG_DUPLICATE_KEY.format(where=step.where, key=key, lines=lines))
    return pairs[0] if pairs else None


def _find(text: str, root: yaml.Node | None, line: int, filename: str) -> _Step:
    found = list(_steps(root, (), (), filename, under_steps=False))
    here = [(node, path) for node, path in found if node.start_mark.line + 1 == line]
    if not here:
        lines = _join(sorted({node.start_mark.line + 1 for node, _ in found})) or NOTHING
        raise StepEditError(MSG_STEP_NOT_FOUND.format(filename=filename, line=line, lines=lines))
    node, path = here[0]
    where = f"{filename}:{line}"
    if node.flow_style:
        raise StepEditError(MSG_FLOW_STEP.format(where=where))
    first = node.value[0][0].start_mark.index
    # The step's indentation is read off this line, so it must be `<spaces>- <key>`.
    if not _DASH.fullmatch(text, text.rfind("\n", 0, first) + 1, first):
        raise StepEditError(MSG_STEP_FORM.format(where=where))
    return _Step(node, path, where)


# --- editing ---------------------------------------------------------------------


def _render(key: str, value: Value) -> str:
    if not _KEY.fullmatch(key):
        raise StepEditError(MSG_INVALID_KEY.format(key=key))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    # Plain only when YAML reads it back as this string (not `1`, `yes`, `null`, `.inf`).
    if _PLAIN.fullmatch(value) and isinstance(yaml.safe_load(value), str):
        return value
    for quote, inside in _INSIDE_QUOTES.items():  # double quotes first
        if inside.fullmatch(value):
            return quote + value + quote
    raise StepEditError(MSG_INVALID_VALUE.format(value=value, key=key))


def _replacement(text: str, pair: _Pair, value: Value, where: str) -> _Edit:
    """The edit that gives the pair's key the value ``value``."""
    key, node = pair
    reason = _value_problem(text, key, node)
    if reason is not None:
        line = key.start_mark.line + 1
        message = MSG_VALUE_FORM.format(where=where, key=key.value, line=line, reason=reason)
        raise StepEditError(message)
    start, end = node.start_mark.index, node.end_mark.index
    inside = _INSIDE_QUOTES.get(text[start])  # None for a plain value
    if isinstance(value, str) and inside is not None and inside.fullmatch(value):
        return start + 1, end - 1, value  # keep the author's quotes
    return start, end, _render(key.value, value)


def _value_problem(text: str, key: yaml.Node, node: yaml.Node) -> str | None:
    if not isinstance(node, yaml.ScalarNode):
        return REASON_COLLECTION.format(kind=_KINDS[type(node)])
    # compose hands an alias the anchored node itself, which lies before this key.
    if node.start_mark.index < key.end_mark.index:
        return REASON_ALIAS
    if node.style in ("|", ">"):
        return REASON_BLOCK
    quote = node.style or ""
    written = text[node.start_mark.index : node.end_mark.index]
    if written != quote + node.value + quote:
        return REASON_FORM
    return None if written else REASON_EMPTY


def _insertion(text: str, step: _Step, new: Mapping[str, str], newline: str) -> _Edit:
    """The edit adding the ``new`` keys after the step's head (see the module docstring)."""
    head: yaml.Node | None = None
    for key, value in step.node.value:
        one_line = value.end_mark.line == key.start_mark.line
        if not one_line or value.start_mark.index < key.end_mark.index:
            break  # a nested block, a multi-line scalar, or an alias
        head = value
    if head is None:
        raise StepEditError(MSG_NO_PLACE.format(where=step.where, keys=", ".join(new)))
    indent = " " * step.node.value[0][0].start_mark.column
    lines = [f"{key}: {value}" for key, value in new.items()]
    line_end = text.find("\n", head.end_mark.index)
    if line_end < 0:  # the head ends the file, without a final line break
        return len(text), len(text), "".join(newline + indent + line for line in lines)
    return line_end + 1, line_end + 1, "".join(indent + line + newline for line in lines)


def read_back_problem(
    edited: str, expected: object, *, differs: str = REASON_OTHER_DATA
) -> str | None:
    """Why ``edited`` does not read exactly as ``expected`` (types included): YAML's own
    complaint, or ``differs``; None if it does. The last guard of every splicing editor."""
    try:
        again = _typed(yaml.safe_load(edited))
    except yaml.YAMLError as exc:
        return " ".join(str(exc).split())
    return None if again == expected else differs


def _check(edited: str, expected: object, where: str) -> None:
    if (problem := read_back_problem(edited, expected)) is not None:
        raise StepEditError(MSG_NOT_READ_BACK.format(where=where, problem=problem))


def _typed(value: object) -> Any:
    """``value`` with every scalar paired with its type, so ``1``, ``True``, ``"1"`` differ."""
    if isinstance(value, dict):
        return {_typed(key): _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def _at(tree: Any, path: _Path) -> Any:
    for part in path:
        tree = tree[_typed(part)] if isinstance(part, str) else tree[part]
    return tree


def _join(lines: Iterable[int]) -> str:
    return ", ".join(str(line) for line in lines)


__all__ = [
    "StepEditError",
    "StepRef",
    "Value",
    "find_step",
    "set_step_keys",
    "set_steps_keys",
    "steps_diff",
]
