"""Compose one YAML document into nodes that keep their line, refusing what YAML hides.

Refused (fatal problems): tabs anywhere (YAML forbids them in indentation and they hide
structure elsewhere), more than one document or none, aliases and merge keys (they copy
content from elsewhere: a step would not be what its lines say), duplicate mapping keys (YAML
keeps the last one silently) and keys that are not plain text.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bot.routing.problems import RoutingProblem

MSG_TAB = "a tab character: indent with spaces"
MSG_NO_DOCUMENT = "an empty file: expected a YAML mapping"
MSG_MANY_DOCUMENTS = "a second YAML document: expected exactly one"
MSG_ALIAS = "a YAML alias (*name): write the content out, it would hide what the step runs"
MSG_MERGE_KEY = "a YAML merge key (<<): write the keys out, it would hide what the step runs"
MSG_DUPLICATE_KEY = "duplicate key {key!r} (first at line {first}): YAML keeps only the last"
MSG_KEY_NOT_TEXT = "a mapping key that is not plain text"
MSG_SYNTAX = "not valid YAML: {problem}"

MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Position:
    line: int
    column: int


def position(node: Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


class _Loader(yaml.SafeLoader):
    """SafeLoader's composer, noting where each alias is used."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.alias_marks: list[yaml.Mark] = []

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            self.alias_marks.append(event.start_mark)
        return super().compose_node(parent, index)


def compose(file: str, text: str) -> tuple[Node | None, list[RoutingProblem]]:
    """The single document's root node, or None and the fatal problems that refused it."""
    tab = text.find("\t")
    if tab >= 0:
        return None, [RoutingProblem(file, *_place(text, tab), MSG_TAB, fatal=True)]
    try:
        loader = _Loader(text)  # the reader checks every character up front: no mark
    except yaml.reader.ReaderError as exc:
        message = MSG_SYNTAX.format(problem=exc.reason)
        return None, [RoutingProblem(file, *_place(text, exc.position), message, fatal=True)]
    try:
        nodes = _documents(loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        message = MSG_SYNTAX.format(problem=exc.problem or exc.context)
        return None, [RoutingProblem(file, line, column, message, fatal=True)]
    finally:
        loader.dispose()
    problems = _shape_problems(file, nodes, loader.alias_marks)
    return (nodes[0] if not problems else None), problems


def _documents(loader: _Loader) -> list[Node]:
    nodes: list[Node] = []
    while loader.check_node():
        # get_node is None only at the end of the stream, which check_node ruled out.
        nodes.append(loader.get_node())  # type: ignore[arg-type]
    return nodes


def _place(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of ``text[index]``."""
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _shape_problems(file: str, nodes: list[Node], aliases: list[yaml.Mark]) -> list[RoutingProblem]:
    if not nodes:
        return [RoutingProblem(file, 1, 1, MSG_NO_DOCUMENT, fatal=True)]
    if len(nodes) > 1:
        where = position(nodes[1])
        return [RoutingProblem(file, where.line, where.column, MSG_MANY_DOCUMENTS, fatal=True)]
    problems = [
        RoutingProblem(file, mark.line + 1, mark.column + 1, MSG_ALIAS, fatal=True)
        for mark in aliases
    ]
    problems.extend(_key_problems(file, nodes[0]))
    return problems


def _key_problems(file: str, root: Node) -> list[RoutingProblem]:
    problems: list[RoutingProblem] = []
    pending = [root]
    while pending:
        node = pending.pop()
        if isinstance(node, SequenceNode):
            pending.extend(node.value)
        elif isinstance(node, MappingNode):
            problems.extend(_mapping_problems(file, node))
            pending.extend(value for _, value in node.value)
    return sorted(problems, key=lambda problem: (problem.line, problem.column))


def _mapping_problems(file: str, node: MappingNode) -> list[RoutingProblem]:
    problems: list[RoutingProblem] = []
    first: dict[str, int] = {}
    for key, _ in node.value:
        where = position(key)
        if key.tag == MERGE_TAG:
            message = MSG_MERGE_KEY
        elif not isinstance(key, ScalarNode) or key.tag != "tag:yaml.org,2002:str":
            message = MSG_KEY_NOT_TEXT
        elif key.value in first:
            message = MSG_DUPLICATE_KEY.format(key=key.value, first=first[key.value])
        else:
            first[key.value] = where.line
            continue
        problems.append(RoutingProblem(file, where.line, where.column, message, fatal=True))
    return problems


def construct(node: Node) -> object:
    """The Python value of a node that ``compose`` accepted (no aliases, text keys)."""
    return SafeConstructor().construct_document(node)


def mapping_items(node: MappingNode) -> list[tuple[str, Node]]:
    """A mapping's text keys and value nodes, in order (``compose`` refused other keys)."""
    return [(str(key.value), value) for key, value in node.value]
