"""Put some keys of one CI step back as they were at main's last green commit.

When a migration PR breaks one step (incident A: the torch ABI audit moved to
``device: cpu-small`` and ``depends_on: image-build-cpu``), the fix is a
*partial* revert: that step's routing keys as they were before, and the rest of
the PR (the other steps it migrated) kept. Reverting the whole file would undo
good work; re-dumping it would rewrite every line. So, as in
:mod:`bot.edit.yaml_steps`, the text is spliced at the marks PyYAML's composer
gives, and only the lines of the keys restored change:

- a key the green step lacks loses its lines: the key's line and every line of
  its value (a block list, a nested mapping), comments on those lines included;
- a key the current step lacks gets the green step's lines for it, inserted
  where :mod:`bot.edit.yaml_steps` inserts new keys (after the step's head: the
  run of one-line ``key: value`` pairs it starts with);
- a key both have with different values gets its lines replaced by green's.

Green's lines come as green wrote them (block or flow style, quoting,
comments on them), shifted to the current step's indentation and written with
the current file's line breaks. Comment lines between keys, and blank lines
after a value, belong to no key and stay.

Where the key lives. vLLM's generator copies a job file's top-level ``depends_on`` to
every step of its ``steps`` whose own ``depends_on`` is missing, null or empty (incident
A's ``torch_abi.yaml`` holds its one step's ``depends_on`` there). So a key of
:data:`FILE_KEYS` is compared as the step reads it (its own value, else its file's), and
when green's step inherited it, it is put back where it lived:

- with ``file_level=True`` (the first try) the file's top-level key gets green's lines
  (or goes, when green's file had none; a new one goes after the file's leading one-line
  keys such as ``group``), and a value of the step's own that green's step did not have
  goes, so that the step inherits again;
- with ``file_level=False`` (for when the caller's routing shows that the file's value
  would re-route the file's other steps) green's file-level lines are written on the
  step itself. A step cannot opt out of its file's value (an empty one inherits it), so
  when green's step read no value at all this is refused.

A step is found by its ``key`` or ``label`` in both texts, as
:func:`bot.edit.yaml_steps.find_step` finds it. What the bot cannot splice with
certainty (a flow-style step, a key on the step's ``- key:`` line, anchors,
aliases or merge keys in the step or in a file-level key it edits or copies) is refused
with :class:`StepRestoreError`; as a last guard the new text must read as the current
document with exactly those keys as in green.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from bot.core.errors import PermanentError
from bot.edit import yaml_parse, yaml_steps
from bot.edit.yaml_spans import Pair, anchored, content_end, merges, pair_span, shifted
from bot.edit.yaml_steps import StepEditError

ROUTE_KEYS = ("device", "num_devices", "num_nodes", "no_plugin", "no_gpu", "depends_on", "mirror")
# The keys a job file's top level gives to its steps (vLLM's generator: a step whose own is
# missing, null or empty gets the file's).
FILE_KEYS = ("depends_on",)

# --- user-facing messages (tests match them) -------------------------------

SIDE_CURRENT = "current"
SIDE_GREEN = "last green"
MSG_PARSE = "{filename} ({side}): cannot parse YAML: {problem}"
MSG_LONE_CR = "{filename}: uses bare CR line endings, which the bot does not edit"
MSG_STEP_NOT_FOUND = "{filename}: no step has the key or label {name!r}"
MSG_GREEN_STEP_NOT_FOUND = (
    "{filename} at the last green commit: no step has the key or label {name!r}"
)
MSG_AMBIGUOUS = "{filename} ({side}): steps on lines {lines} all have the key or label {name!r}"
MSG_FLOW_STEP = (
    "{where} ({side}): the step is written in flow style (`- {{...}}`), which the bot does not edit"
)
MSG_FIRST_LINE = (
    "{where} ({side}): {key!r} is on the step's first line (`- {key}: ...`), "
    "which the bot does not edit"
)
MSG_ANCHORS = (
    "{where} ({side}): the step uses anchors, aliases or merge keys (`&`, `*`, `<<`), "
    "which the bot does not edit"
)
MSG_FILE_ANCHORS = (
    "{where} ({side}): the file's top-level {key!r} uses anchors or aliases, or the top "
    "level a merge key (`&`, `*`, `<<`), which the bot does not edit"
)
MSG_DUPLICATE_KEY = "{where} ({side}): key {key!r} appears more than once in the step"
MSG_DUPLICATE_FILE_KEY = (
    "{where} ({side}): key {key!r} appears more than once at the top level of the file"
)
MSG_NO_PLACE = (
    "{where}: the step's first key is not a one-line `key: value`, so there is no place "
    "to add {keys}"
)
MSG_NO_OWN_NONE = (
    "{where}: at the last green commit the step had no {key!r}, and now its file gives one "
    "to every step; the step cannot opt out on its own (an empty {key!r} inherits the file's)"
)
MSG_NOTHING = "{where}: {keys} already read as at the last green commit: nothing to restore"
MSG_NOT_READ_BACK = "{where}: after the restore the file would not read back as intended: {problem}"
REASON_OTHER_DATA = "the document would differ from the current one with the keys restored"

_LONE_CR = re.compile(r"\r(?!\n)")
# A key's value as yaml_steps._typed gives it when it does not count: missing (``.get``
# gives None), null, empty text or an empty list. A step with one of these inherits.
_INHERITS: tuple[object, ...] = (None, ("NoneType", None), ("str", ""), [])
_Edit = tuple[int, int, str]  # replace text[start:end] with the string


class StepRestoreError(PermanentError):
    """The keys cannot be restored with certainty; the message is meant for users."""


@dataclass(frozen=True)
class _Side:
    """A mapping to read or edit: the step, or the top level of the job file holding it."""

    text: str
    data: object
    node: yaml.MappingNode
    path: tuple[str | int, ...]
    values: dict[Any, Any]  # the mapping's data, typed as yaml_steps._typed types it
    where: str
    side: str
    top: _Side | None = None  # the file's top level, when the step inherits from it
    file_level: bool = False  # this is the file's top level

    @property
    def column(self) -> int:
        """The mapping's keys' indentation."""
        return int(self.node.value[0][0].start_mark.column)

    def value(self, key: str) -> Any:
        """The key's typed value; None when the mapping has no such key."""
        return self.values.get(yaml_steps._typed(key))

    def pair(self, key: str) -> Pair | None:
        pairs = [(k, v) for k, v in self.node.value if k.value == key]
        if len(pairs) > 1:
            message = MSG_DUPLICATE_FILE_KEY if self.file_level else MSG_DUPLICATE_KEY
            raise StepRestoreError(message.format(where=self.where, side=self.side, key=key))
        pair = pairs[0] if pairs else None
        if self.file_level:
            self._refuse_anchors(key, pair)
        return pair

    def _refuse_anchors(self, key: str, pair: Pair | None) -> None:
        """A file-level key is copied or edited as text: an anchor there could be used
        elsewhere, an alias or a merge key makes the text not its value."""
        merged = merges(self.node)
        if merged or (pair is not None and anchored(self.text, *pair_span(self.text, pair))):
            message = MSG_FILE_ANCHORS.format(where=self.where, side=self.side, key=key)
            raise StepRestoreError(message)

    def lines(self, pair: Pair) -> tuple[int, int]:
        """Where the key's lines start and end (after the last line's break)."""
        key, value = pair
        start = self.text.rfind("\n", 0, key.start_mark.index) + 1
        if self.text[start : key.start_mark.index].strip(" "):
            message = MSG_FIRST_LINE.format(where=self.where, side=self.side, key=key.value)
            raise StepRestoreError(message)
        end = content_end(value)
        # A block scalar's end mark comes after its line breaks (and blank lines).
        while end > key.end_mark.index and self.text[end - 1] in " \r\n":
            end -= 1
        line_end = self.text.find("\n", end)
        return start, len(self.text) if line_end < 0 else line_end + 1


@dataclass(frozen=True)
class _Put:
    """Green's lines for ``key`` to write in ``target`` (None: the key goes)."""

    target: _Side
    key: str
    lines: str | None  # at the target's indentation, with the current file's line breaks
    value: object  # what they read as, typed (for the last guard)


def restored_diff(old: str, new: str, path: str) -> str:
    """Unified diff of ``old`` → ``new`` as ``git diff`` shows it; ``""`` when equal."""
    return yaml_steps.steps_diff(old, new, path)


def restore_step_keys(
    current: str,
    green: str,
    *,
    step: str,
    keys: Sequence[str] = ROUTE_KEYS,
    filename: str,
    file_level: bool = True,
) -> str:
    """``current`` with the ``keys`` of the step named ``step`` as they read in ``green``.

    ``file_level``: put a key the step inherits back at the top of the file (True) or on
    the step itself (False); see the module's docstring.
    """
    if _LONE_CR.search(current):
        raise StepRestoreError(MSG_LONE_CR.format(filename=filename))
    newline = "\r\n" if "\r\n" in current else "\n"
    now = _side(current, step, filename, SIDE_CURRENT, MSG_STEP_NOT_FOUND)
    then = _side(green, step, filename, SIDE_GREEN, MSG_GREEN_STEP_NOT_FOUND)
    wanted = dict.fromkeys(keys)
    puts = [put for key in wanted for put in _puts(key, now, then, file_level, newline)]
    if not puts:
        raise StepRestoreError(MSG_NOTHING.format(where=now.where, keys=", ".join(wanted)))
    expected = yaml_steps._typed(now.data)
    text = current
    for start, end, new_text in sorted(_edits(puts, expected, newline), reverse=True):
        text = text[:start] + new_text + text[end:]
    _check(text, expected, now.where)
    return text


# --- reading ---------------------------------------------------------------------


def _side(text: str, name: str, filename: str, side: str, not_found: str) -> _Side:
    try:
        root, data = yaml_parse.parsed(text)
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise StepRestoreError(
            MSG_PARSE.format(filename=filename, side=side, problem=problem)
        ) from None
    node, path = _step(text, root, name, filename, side, not_found)
    typed = yaml_steps._typed(data)
    top = None
    # The generator gives a file's top-level keys to the steps of its top-level `steps`
    # (path ("steps", index)), not to steps nested deeper.
    if len(path) == 2 and isinstance(root, yaml.MappingNode):
        top = _Side(text, data, root, (), typed, filename, side, file_level=True)
    where = f"{filename}:{node.start_mark.line + 1}"
    return _Side(text, data, node, path, yaml_steps._at(typed, path), where, side, top)


def _step(
    text: str, root: yaml.Node | None, name: str, filename: str, side: str, not_found: str
) -> tuple[yaml.MappingNode, tuple[str | int, ...]]:
    """The one step named ``name``, in a shape the bot splices."""
    try:
        found = [
            (node, path)
            for node, path in yaml_steps._steps(root, (), (), filename, under_steps=False)
            if any(yaml_steps._names(key, value, name) for key, value in node.value)
        ]
    except StepEditError:  # an alias inside its own anchor
        raise StepRestoreError(MSG_ANCHORS.format(where=filename, side=side)) from None
    if not found:
        raise StepRestoreError(not_found.format(filename=filename, name=name))
    nodes = {id(node): node for node, _ in found}
    if len(nodes) > 1:
        lines = ", ".join(str(n.start_mark.line + 1) for n in nodes.values())
        message = MSG_AMBIGUOUS.format(filename=filename, side=side, lines=lines, name=name)
        raise StepRestoreError(message)
    node, path = found[0]
    where = f"{filename}:{node.start_mark.line + 1}"
    if node.flow_style:
        raise StepRestoreError(MSG_FLOW_STEP.format(where=where, side=side))
    # One node at several paths: the step itself is used through an alias.
    shared = len(found) > 1 or merges(node)
    if shared or anchored(text, node.start_mark.index, node.end_mark.index):
        raise StepRestoreError(MSG_ANCHORS.format(where=where, side=side))
    return node, path


# --- what goes where ----------------------------------------------------------------


def _puts(key: str, now: _Side, then: _Side, file_level: bool, newline: str) -> list[_Put]:
    """What restoring ``key`` of the step writes, and in which mapping."""
    if key not in FILE_KEYS:
        return [] if now.value(key) == then.value(key) else [_put(now, key, then, newline)]
    if _reads(now, key) == _reads(then, key):
        return []  # written differently maybe, but the step reads the same
    if then.value(key) not in _INHERITS:
        return [_put(now, key, then, newline)]  # green's step had its own: as for any key
    # Green's step inherited: a value of its own goes (or gets green's empty one)...
    puts = [] if now.value(key) in _INHERITS else [_put(now, key, then, newline)]
    if _file_value(now, key) == _file_value(then, key):
        return puts
    # ... and the file's value comes back, at the top of the file or on the step.
    if file_level and now.top is not None:
        return [*puts, _put(now.top, key, then.top, newline)]
    if _file_value(then, key) in _INHERITS:
        raise StepRestoreError(MSG_NO_OWN_NONE.format(where=now.where, key=key))
    return [_put(now, key, then.top, newline)]


def _reads(side: _Side, key: str) -> Any:
    """The value the generator gives the step: its own, else its file's; None for none."""
    own = side.value(key)
    if own not in _INHERITS:
        return own
    inherited = _file_value(side, key)
    return None if inherited in _INHERITS else inherited


def _file_value(side: _Side, key: str) -> Any:
    return None if side.top is None else side.top.value(key)


def _put(target: _Side, key: str, source: _Side | None, newline: str) -> _Put:
    """``target``'s ``key`` as green's mapping ``source`` has it (none: it goes)."""
    if source is None or (pair := source.pair(key)) is None:
        return _Put(target, key, None, None)
    return _Put(target, key, _moved(source, pair, target.column, newline), source.value(key))


# --- editing ---------------------------------------------------------------------


def _edits(puts: Sequence[_Put], expected: Any, newline: str) -> list[_Edit]:
    """The edits writing ``puts``; ``expected`` (the current document, typed) gets them too."""
    edits: list[_Edit] = []
    inserted: dict[int, tuple[_Side, dict[str, str]]] = {}  # by target mapping
    for put in puts:
        values = yaml_steps._at(expected, put.target.path)
        name = yaml_steps._typed(put.key)
        if put.lines is None:
            del values[name]
        else:
            values[name] = put.value
        old = put.target.pair(put.key)
        if old is None:
            assert put.lines is not None  # the values differ, so green has the key
            inserted.setdefault(id(put.target), (put.target, {}))[1][put.key] = put.lines
        else:
            edits.append(_replacement(put.target, old, put.lines, newline))
    edits.extend(_insertion(target, blocks, newline) for target, blocks in inserted.values())
    return edits


def _moved(side: _Side, pair: Pair, column: int, newline: str) -> str:
    """Green's lines for the key, at ``column`` and with ``newline`` line breaks."""
    start, end = side.lines(pair)
    block = side.text[start:end].replace("\r\n", "\n")
    if not block.endswith("\n"):
        block += "\n"
    shift = column - side.column
    moved = [shifted(line, shift) for line in block.split("\n")[:-1]]
    return "".join(line + newline for line in moved)


def _replacement(side: _Side, pair: Pair, lines: str | None, newline: str) -> _Edit:
    """The edit putting ``lines`` (none: removing the key) in place of the key's lines."""
    start, end = side.lines(pair)
    if end == len(side.text) and not side.text.endswith("\n"):
        # The key's lines end the file without a final line break: so do the new ones.
        if lines is None:
            return start - len(newline), end, ""  # the line break before goes too
        return start, end, lines.removesuffix(newline)
    return start, end, lines or ""


def _insertion(side: _Side, blocks: dict[str, str], newline: str) -> _Edit:
    """The edit adding ``blocks`` (key: its lines) after the mapping's head (its leading
    one-line keys), as yaml_steps adds new keys; at the top of a file without one, before
    its first key."""
    head: yaml.Node | None = None
    for key, value in side.node.value:
        one_line = value.end_mark.line == key.start_mark.line
        if not one_line:
            break  # a nested block or a multi-line scalar
        head = value
    text = "".join(blocks.values())
    if head is None and side.file_level:
        start = side.text.rfind("\n", 0, side.node.value[0][0].start_mark.index) + 1
        return start, start, text
    if head is None:
        keys = ", ".join(blocks)
        raise StepRestoreError(MSG_NO_PLACE.format(where=side.where, keys=keys))
    line_end = side.text.find("\n", head.end_mark.index)
    if line_end < 0:  # the head ends the file, without a final line break
        return len(side.text), len(side.text), newline + text.removesuffix(newline)
    return line_end + 1, line_end + 1, text


def _check(edited: str, expected: object, where: str) -> None:
    """Refuse unless ``edited`` reads exactly as ``expected`` (types included)."""
    problem = yaml_steps.read_back_problem(edited, expected, differs=REASON_OTHER_DATA)
    if problem is not None:
        raise StepRestoreError(MSG_NOT_READ_BACK.format(where=where, problem=problem))


__all__ = ["FILE_KEYS", "ROUTE_KEYS", "StepRestoreError", "restore_step_keys", "restored_diff"]
