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

A step is found by its ``key`` or ``label`` in both texts, as
:func:`bot.edit.yaml_steps.find_step` finds it. What the bot cannot splice with
certainty (a flow-style step, a key on the step's ``- key:`` line, anchors,
aliases or merge keys in the step) is refused with :class:`StepRestoreError`;
as a last guard the new text must read as the current document with exactly
those keys of that step as in green.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from bot.edit import yaml_parse, yaml_steps
from bot.edit.yaml_steps import StepEditError
from bot.service.errors import PermanentError

ROUTE_KEYS = ("device", "num_devices", "num_nodes", "no_plugin", "no_gpu", "depends_on", "mirror")

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
MSG_DUPLICATE_KEY = "{where} ({side}): key {key!r} appears more than once in the step"
MSG_NO_PLACE = (
    "{where}: the step's first key is not a one-line `key: value`, so there is no place "
    "to add {keys}"
)
MSG_NOTHING = "{where}: {keys} already read as at the last green commit: nothing to restore"
MSG_NOT_READ_BACK = "{where}: after the restore the file would not read back as intended: {problem}"
REASON_OTHER_DATA = "the document would differ from the current one with the keys restored"

_MERGE = "tag:yaml.org,2002:merge"
_LONE_CR = re.compile(r"\r(?!\n)")
_Pair = tuple[yaml.Node, yaml.Node]
_Edit = tuple[int, int, str]  # replace text[start:end] with the string


class StepRestoreError(PermanentError):
    """The keys cannot be restored with certainty; the message is meant for users."""


@dataclass(frozen=True)
class _Side:
    text: str
    data: object
    node: yaml.MappingNode
    path: tuple[str | int, ...]
    where: str
    side: str

    @property
    def column(self) -> int:
        """The step's keys' indentation."""
        return int(self.node.value[0][0].start_mark.column)

    def pair(self, key: str) -> _Pair | None:
        pairs = [(k, v) for k, v in self.node.value if k.value == key]
        if len(pairs) > 1:
            raise StepRestoreError(
                MSG_DUPLICATE_KEY.format(where=self.where, side=self.side, key=key)
            )
        return pairs[0] if pairs else None

    def lines(self, pair: _Pair) -> tuple[int, int]:
        """Where the key's lines start and end (after the last line's break)."""
        key, value = pair
        start = self.text.rfind("\n", 0, key.start_mark.index) + 1
        if self.text[start : key.start_mark.index].strip(" "):
            message = MSG_FIRST_LINE.format(where=self.where, side=self.side, key=key.value)
            raise StepRestoreError(message)
        end = _content_end(value)
        # A block scalar's end mark comes after its line breaks (and blank lines).
        while end > key.end_mark.index and self.text[end - 1] in " \r\n":
            end -= 1
        line_end = self.text.find("\n", end)
        return start, len(self.text) if line_end < 0 else line_end + 1


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
) -> str:
    """``current`` with the ``keys`` of the step named ``step`` as they read in ``green``."""
    if _LONE_CR.search(current):
        raise StepRestoreError(MSG_LONE_CR.format(filename=filename))
    newline = "\r\n" if "\r\n" in current else "\n"
    now = _side(current, step, filename, SIDE_CURRENT, MSG_STEP_NOT_FOUND)
    then = _side(green, step, filename, SIDE_GREEN, MSG_GREEN_STEP_NOT_FOUND)
    expected = yaml_steps._typed(now.data)
    wanted = yaml_steps._at(expected, now.path)
    was = yaml_steps._at(yaml_steps._typed(then.data), then.path)
    edits: list[_Edit] = []
    inserted: dict[str, str] = {}
    changed: list[str] = []
    for key in dict.fromkeys(keys):
        name = yaml_steps._typed(key)
        if wanted.get(name) == was.get(name):
            continue
        changed.append(key)
        old, new = now.pair(key), then.pair(key)
        lines = None if new is None else _moved(then, new, now.column, newline)
        if lines is None:
            del wanted[name]
        else:
            wanted[name] = was[name]
        if old is None:
            assert lines is not None  # the values differ, so green has the key
            inserted[key] = lines
        else:
            edits.append(_replacement(now, old, lines, newline))
    if not changed:
        raise StepRestoreError(MSG_NOTHING.format(where=now.where, keys=", ".join(keys)))
    if inserted:
        edits.append(_insertion(now, inserted, newline))
    text = current
    for start, end, new_text in sorted(edits, reverse=True):
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
    if len(found) > 1 or _anchored(text, node):
        raise StepRestoreError(MSG_ANCHORS.format(where=where, side=side))
    return _Side(text, data, node, path, where, side)


def _anchored(text: str, node: yaml.MappingNode) -> bool:
    """An anchor, an alias or a merge key inside the step."""
    if any(key.tag == _MERGE for key, _ in node.value):
        return True
    start, end = node.start_mark.index, node.end_mark.index
    return any(
        (isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None)
        and start <= _index(event.start_mark) < end
        for event in yaml.parse(text, Loader=yaml.SafeLoader)
    )


def _index(mark: object) -> int:
    # The parser's events always carry marks; the stubs allow None.
    return int(getattr(mark, "index", -1))


def _content_end(node: yaml.Node) -> int:
    """Where the node's last character is: a block collection's end mark lies at the
    next token, possibly lines further down."""
    if not isinstance(node, yaml.CollectionNode) or node.flow_style:
        return int(node.end_mark.index)
    items: list[yaml.Node] = (
        [part for pair in node.value for part in pair]
        if isinstance(node, yaml.MappingNode)
        else list(node.value)
    )
    return max(_content_end(item) for item in items)


# --- editing ---------------------------------------------------------------------


def _moved(side: _Side, pair: _Pair, column: int, newline: str) -> str:
    """Green's lines for the key, at ``column`` and with ``newline`` line breaks."""
    start, end = side.lines(pair)
    block = side.text[start:end].replace("\r\n", "\n")
    if not block.endswith("\n"):
        block += "\n"
    shift = column - side.column
    moved = [_shifted(line, shift) for line in block.split("\n")[:-1]]
    return "".join(line + newline for line in moved)


def _shifted(line: str, shift: int) -> str:
    if shift >= 0:
        return " " * shift + line if line.strip() else line
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, -shift) :]


def _replacement(side: _Side, pair: _Pair, lines: str | None, newline: str) -> _Edit:
    """The edit putting ``lines`` (none: removing the key) in place of the key's lines."""
    start, end = side.lines(pair)
    if end == len(side.text) and not side.text.endswith("\n"):
        # The key's lines end the file without a final line break: so do the new ones.
        if lines is None:
            return start - len(newline), end, ""  # the line break before goes too
        return start, end, lines.removesuffix(newline)
    return start, end, lines or ""


def _insertion(side: _Side, blocks: dict[str, str], newline: str) -> _Edit:
    """The edit adding ``blocks`` (key: its lines) after the step's head, as yaml_steps
    adds new keys."""
    head: yaml.Node | None = None
    for key, value in side.node.value:
        one_line = value.end_mark.line == key.start_mark.line
        if not one_line:
            break  # a nested block or a multi-line scalar
        head = value
    if head is None:
        keys = ", ".join(blocks)
        raise StepRestoreError(MSG_NO_PLACE.format(where=side.where, keys=keys))
    text = "".join(blocks.values())
    line_end = side.text.find("\n", head.end_mark.index)
    if line_end < 0:  # the head ends the file, without a final line break
        return len(side.text), len(side.text), newline + text.removesuffix(newline)
    return line_end + 1, line_end + 1, text


def _check(edited: str, expected: object, where: str) -> None:
    """Refuse unless ``edited`` reads exactly as ``expected`` (types included)."""
    problem = yaml_steps.read_back_problem(edited, expected, differs=REASON_OTHER_DATA)
    if problem is not None:
        raise StepRestoreError(MSG_NOT_READ_BACK.format(where=where, problem=problem))


__all__ = ["ROUTE_KEYS", "StepRestoreError", "restore_step_keys", "restored_diff"]
