"""YAML read once for both of its views: the node tree with its marks, and the data."""

from __future__ import annotations

import yaml

MERGE_KEY = "<<"


def parsed(text: str) -> tuple[yaml.Node | None, object]:
    """The document's node tree (with its marks) and its data, from one parse (PyYAML's
    parser is pure Python, and pipeline files are long); ``yaml.YAMLError`` as PyYAML's."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if MERGE_KEY in text:
            # The constructor rewrites the mappings a merge key merges, in place; the
            # editors need the tree as written, so such a document is read a second time.
            return node, yaml.safe_load(text)
        return node, loader.construct_document(node)
    finally:
        loader.dispose()
