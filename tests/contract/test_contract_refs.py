"""The contract's schemas with every local ``$ref`` followed once, before any validation."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sandbox.contract import REF_WITH_SIBLINGS, followed_refs


def document() -> dict[str, Any]:
    return {
        "paths": {"/x": {"get": {"responses": {"200": {"$ref": "#/components/responses/ok"}}}}},
        "components": {
            "responses": {
                "ok": {"$ref": "#/components/responses/plain"},
                "plain": {"content": {"schema": {"$ref": "#/components/schemas/node"}}},
            },
            "schemas": {
                "node": {
                    "type": "object",
                    "properties": {"next": {"$ref": "#/components/schemas/node"}},
                    "discriminator": {"mapping": {"a": "#/components/schemas/node"}},
                },
            },
        },
    }


def test_a_reference_becomes_its_target_itself_and_a_recursive_schema_a_cycle() -> None:
    original = document()
    followed = followed_refs(original)
    components = followed["components"]
    node = components["schemas"]["node"]
    assert node["properties"]["next"] is node
    assert components["responses"]["plain"]["content"]["schema"] is node
    # A reference to a reference ends at the last target.
    assert followed["paths"]["/x"]["get"]["responses"]["200"] is components["responses"]["plain"]
    assert components["responses"]["ok"] is components["responses"]["plain"]
    # Pointers in the discriminator's mapping are text, not references: kept.
    assert node["discriminator"]["mapping"] == {"a": "#/components/schemas/node"}
    assert original == document()  # the routing's copy is untouched


def test_a_reference_with_sibling_keywords_is_refused() -> None:
    broken = document()
    broken["components"]["schemas"]["node"]["properties"]["next"]["nullable"] = True
    expected = REF_WITH_SIBLINGS.format(ref="#/components/schemas/node", keys=["$ref", "nullable"])
    with pytest.raises(ValueError, match=re.escape(expected)):
        followed_refs(broken)
