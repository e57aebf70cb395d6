"""Where things are in a YAML text, for editors that change a few lines and leave the rest
as written: a key's lines, the last character of a value, anchors and aliases in a span, and
lines moved to another indentation."""

from __future__ import annotations

import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"
Pair = tuple[yaml.Node, yaml.Node]


def merges(node: yaml.MappingNode) -> bool:
    return any(key.tag == MERGE_TAG for key, _ in node.value)


def anchored(text: str, start: int, end: int) -> bool:
    """An anchor or an alias between ``start`` and ``end``."""
    return any(
        (isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None)
        and start <= mark_index(event.start_mark) < end
        for event in yaml.parse(text, Loader=yaml.SafeLoader)
    )


def pair_span(text: str, pair: Pair) -> tuple[int, int]:
    """From the key to the end of its value's last line. An alias's node is the anchored
    one, written before the key: then the key's own line."""
    key, value = pair
    line_end = text.find("\n", max(content_end(value), key.end_mark.index))
    return key.start_mark.index, len(text) if line_end < 0 else line_end


def mark_index(mark: object) -> int:
    # The parser's events always carry marks; the stubs allow None.
    return int(getattr(mark, "index", -1))


def content_end(node: yaml.Node) -> int:
    """Where the node's last character is: a block collection's end mark lies at the
    next token, possibly lines further down."""
    if not isinstance(node, yaml.CollectionNode) or node.flow_style:
        return int(node.end_mark.index)
    items: list[yaml.Node] = (
        [part for pair in node.value for part in pair]
        if isinstance(node, yaml.MappingNode)
        else list(node.value)
    )
    return max(content_end(item) for item in items)


def shifted(line: str, shift: int) -> str:
    if shift >= 0:
        return " " * shift + line if line.strip() else line
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, -shift) :]
