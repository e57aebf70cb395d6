"""One parse for the node tree and the data: the data is what ``yaml.safe_load`` reads."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from bot.edit.yaml_parse import parsed

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(DOCUMENTS)
def test_the_data_is_what_safe_load_reads(data: object) -> None:
    text = yaml.safe_dump(data)
    node, read = parsed(text)
    assert read == yaml.safe_load(text)
    assert node is not None
    assert node.start_mark.line == 0


def test_an_empty_document_has_no_node_and_no_data() -> None:
    assert parsed("") == (None, None)
    assert parsed("# only a comment\n") == (None, None)


def test_yaml_errors_are_pyyaml_s() -> None:
    with pytest.raises(yaml.YAMLError, match="expected a single document"):
        parsed("a: 1\n---\nb: 2\n")
    with pytest.raises(yaml.YAMLError):
        parsed("steps: [unclosed\n")


def test_a_merge_key_is_merged_in_the_data_and_kept_in_the_tree() -> None:
    node, data = parsed("base: &b {device: l4}\nstep:\n  <<: *b\n  label: s\n")
    assert data == {"base": {"device": "l4"}, "step": {"device": "l4", "label": "s"}}
    assert isinstance(node, yaml.MappingNode)
    step = node.value[1][1]
    assert [key.value for key, _ in step.value] == ["<<", "label"]
