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


# libyaml's parser and composer where PyYAML has them (its wheels do): composing vLLM's CI
# tree took 44 ms in Python and 3.5 ms in C. Marks count characters in both.
_Loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)


def compose(file: str, text: str) -> tuple[Node | None, list[RoutingProblem]]:
    """The single document's root node, or None and the fatal problems that refused it."""
    tab = text.find("\t")
    if tab >= 0:
        return None, [RoutingProblem(file, *_place(text, tab), MSG_TAB, fatal=True)]
    try:
        # Every character is checked up front and placed by its index in the text (libyaml
        # would place it by its byte in UTF-8).
        yaml.reader.Reader(text)
        nodes = _documents(text)
    except yaml.reader.ReaderError as exc:
        message = MSG_SYNTAX.format(problem=exc.reason)
        return None, [RoutingProblem(file, *_place(text, exc.position), message, fatal=True)]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        message = MSG_SYNTAX.format(problem=exc.problem or exc.context)
        return None, [RoutingProblem(file, line, column, message, fatal=True)]
    problems = _shape_problems(file, nodes, _alias_places(text) if _aliased(nodes) else [])
    return (nodes[0] if not problems else None), problems


def _documents(text: str) -> list[Node]:
    loader = _Loader(text)
    nodes: list[Node] = []
    try:
        while loader.check_node():
            # get_node is None only at the end of the stream, which check_node ruled out.
            nodes.append(loader.get_node())  # type: ignore[arg-type]
    finally:
        loader.dispose()
    return nodes


def _aliased(nodes: list[Node]) -> bool:
    """Whether an alias was composed: it is the anchored node itself, met a second time."""
    seen: set[int] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if id(node) in seen:
            return True
        seen.add(id(node))
        if isinstance(node, SequenceNode):
            pending.extend(node.value)
        elif isinstance(node, MappingNode):
            pending.extend(part for pair in node.value for part in pair)
    return False


def _alias_places(text: str) -> list[Position]:
    """Where each alias is used (the composed nodes only know where their anchor is)."""
    events = yaml.parse(text, Loader=_Loader)
    marks = [event.start_mark for event in events if isinstance(event, yaml.AliasEvent)]
    return [Position(mark.line + 1, mark.column + 1) for mark in marks if mark is not None]


def _place(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of ``text[index]``."""
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _shape_problems(file: str, nodes: list[Node], aliases: list[Position]) -> list[RoutingProblem]:
    if not nodes:
        return [RoutingProblem(file, 1, 1, MSG_NO_DOCUMENT, fatal=True)]
    if len(nodes) > 1:
        where = position(nodes[1])
        return [RoutingProblem(file, where.line, where.column, MSG_MANY_DOCUMENTS, fatal=True)]
    problems = [
        RoutingProblem(file, place.line, place.column, MSG_ALIAS, fatal=True) for place in aliases
    ]
    problems.extend(_key_problems(file, nodes[0]))
    return problems


def _key_problems(file: str, root: Node) -> list[RoutingProblem]:
    problems: list[RoutingProblem] = []
    pending = [root]
    seen: set[int] = set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue  # an alias (perhaps of a node that holds it): walked where anchored
        seen.add(id(node))
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
