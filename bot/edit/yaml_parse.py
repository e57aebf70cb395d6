"""YAML read once for both of its views: the node tree with its marks, and the data."""

from __future__ import annotations

import yaml

MERGE_KEY = "<<"
# libyaml's parser where PyYAML has it (its wheels do): the same nodes and marks (indexes,
# lines and columns count characters in both), many times faster on long pipeline files.
_Loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)


def parsed(text: str) -> tuple[yaml.Node | None, object]:
    """The document's node tree (with its marks) and its data, from one parse (pipeline
    files are long); ``yaml.YAMLError`` as PyYAML's."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if MERGE_KEY in text:
            # The constructor rewrites the mappings a merge key merges, in place; the
            # editors need the tree as written, so such a document is read a second time.
            return node, yaml.load(text, Loader=_Loader)  # a safe loader, C or Python
        return node, loader.construct_document(node)
    finally:
        loader.dispose()
