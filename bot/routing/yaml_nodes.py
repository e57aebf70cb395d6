"""Compose one YAML document into nodes that keep their line, read as ``yaml.safe_load`` does.

vLLM's generator reads every job file with ``yaml.safe_load``, so what it accepts is accepted
here too: anchors, aliases and merge keys (``<<``) are valid (vLLM's ``hardware_tests/cpu.yaml``
shares a ``source_file_dependencies`` list through an alias), and a key written twice keeps its
last value. Merge keys are expanded in place, as the constructor does, so a step's fields are
what the generator sees; an aliased node is the anchored node itself, so its line is where it
is written once.

Fatal (the generator cannot read it either): YAML syntax errors, no document or more than
one, a mapping key that is not plain text, and a node that holds itself through an alias (a
loop no step can be made of). A key written twice in one mapping is reported, not refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bot.routing.problems import RoutingProblem

MSG_NO_DOCUMENT = "an empty file: expected a YAML mapping"
MSG_MANY_DOCUMENTS = "a second YAML document: expected exactly one"
MSG_DUPLICATE_KEY = "duplicate key {key!r} (first at line {first}): YAML keeps only the last"
MSG_KEY_NOT_TEXT = "a mapping key that is not plain text"
MSG_RECURSIVE = "a YAML alias inside the node it names: the content never ends"
MSG_SYNTAX = "not valid YAML: {problem}"

MERGE_TAG = "tag:yaml.org,2002:merge"
TEXT_TAG = "tag:yaml.org,2002:str"


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
    """The single document's root node (merge keys expanded), or None and the fatal
    problems that refused it; non-fatal problems (duplicate keys) come with a root."""
    try:
        # Every character is checked up front and placed by its index in the text (libyaml
        # would place it by its byte in UTF-8).
        yaml.reader.Reader(text)
        nodes = _documents(text)
    except yaml.reader.ReaderError as exc:
        message = MSG_SYNTAX.format(problem=exc.reason)
        return None, [RoutingProblem(file, *_place(text, exc.position), message, fatal=True)]
    except yaml.MarkedYAMLError as exc:
        return None, [_marked(file, exc)]
    if not nodes:
        return None, [RoutingProblem(file, 1, 1, MSG_NO_DOCUMENT, fatal=True)]
    if len(nodes) > 1:
        where = position(nodes[1])
        return None, [RoutingProblem(file, where.line, where.column, MSG_MANY_DOCUMENTS, True)]
    return _expanded(file, nodes[0])


def _marked(file: str, exc: yaml.MarkedYAMLError) -> RoutingProblem:
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    message = MSG_SYNTAX.format(problem=exc.problem or exc.context)
    return RoutingProblem(file, line, column, message, fatal=True)


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


def _place(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of ``text[index]``."""
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _expanded(file: str, root: Node) -> tuple[Node | None, list[RoutingProblem]]:
    loop = _loop(root)
    if loop is not None:
        where = position(loop)
        return None, [RoutingProblem(file, where.line, where.column, MSG_RECURSIVE, True)]
    problems: list[RoutingProblem] = []
    pending = [root]
    seen: set[int] = set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue  # an alias: expanded where it is anchored
        seen.add(id(node))
        if isinstance(node, SequenceNode):
            pending.extend(node.value)
        elif isinstance(node, MappingNode):
            problems.extend(_mapping_problems(file, node))
            pending.extend(value for _, value in node.value)
    problems.sort(key=lambda problem: (problem.line, problem.column))
    if any(problem.fatal for problem in problems):
        return None, problems
    return root, problems


def _loop(root: Node) -> Node | None:
    """A node that contains itself (through an alias), if any: depth-first with the path."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    on_path: set[int] = set()
    done: set[int] = set()
    while stack:
        node, leaving = stack.pop()
        if leaving:
            on_path.discard(id(node))
            done.add(id(node))
            continue
        if id(node) in on_path:
            return node
        if id(node) in done:
            continue
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    return None


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _mapping_problems(file: str, node: MappingNode) -> list[RoutingProblem]:
    """Duplicate and non-text keys of ``node``, whose merge keys are then expanded."""
    problems: list[RoutingProblem] = []
    first: dict[str, int] = {}
    for key, _ in node.value:
        where = position(key)
        if key.tag == MERGE_TAG:
            continue
        if not isinstance(key, ScalarNode) or key.tag != TEXT_TAG:
            problems.append(RoutingProblem(file, where.line, where.column, MSG_KEY_NOT_TEXT, True))
        elif key.value in first:
            message = MSG_DUPLICATE_KEY.format(key=key.value, first=first[key.value])
            problems.append(RoutingProblem(file, where.line, where.column, message))
        else:
            first[key.value] = where.line
    try:
        _merge(node)
    except ConstructorError as exc:
        problems.append(_marked(file, exc))
    return problems


def _merge(node: MappingNode) -> None:
    """Expand ``<<`` as the safe constructor does (merged keys first, the node's own after,
    so its own win), then keep each key's last value, as constructing the mapping would."""
    SafeConstructor().flatten_mapping(node)
    last: dict[str, int] = {}
    for index, (key, _) in enumerate(node.value):
        last[str(key.value)] = index
    node.value = [
        pair for index, pair in enumerate(node.value) if last[str(pair[0].value)] == index
    ]


def construct(node: Node) -> object:
    """The Python value of a node that ``compose`` accepted."""
    return SafeConstructor().construct_document(node)


def mapping_items(node: MappingNode) -> list[tuple[str, Node]]:
    """A mapping's text keys and value nodes, in order (``compose`` refused other keys)."""
    return [(str(key.value), value) for key, value in node.value]
