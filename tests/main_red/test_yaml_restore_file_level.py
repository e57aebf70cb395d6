"""The partial revert where the key lives: a ``depends_on`` the step inherits from the top
of its job file goes back there (or, when the caller asks, onto the step itself)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bot.edit.yaml_restore import (
    MSG_ANCHORS,
    MSG_DUPLICATE_FILE_KEY,
    MSG_FILE_ANCHORS,
    MSG_NO_OWN_NONE,
    MSG_NOTHING,
    ROUTE_KEYS,
    SIDE_CURRENT,
    SIDE_GREEN,
    StepRestoreError,
    restore_step_keys,
    restored_diff,
)

TORCH_ABI = ".buildkite/test_areas/torch_abi.yaml"
AUDIT = "torch-stable-abi-audit"
AUDIT_LABEL = ":nvidia: (L4) Torch Stable ABI Audit"

# vLLM's torch_abi.yaml before the migration (PR #54326): one step, which gets its
# depends_on from the file's top level.
TORCH_ABI_GREEN = f"""\
group: Torch ABI
depends_on:
  - image-build
steps:
  - label: "{AUDIT_LABEL}"
    key: {AUDIT}
    timeout_in_minutes: 5
    source_file_dependencies:
      - .buildkite/check-torch-abi.py
      - csrc/
      - cmake/
      - setup.py
    commands:
      - python3 .buildkite/check-torch-abi.py
"""

# After the migration: the file's depends_on moved to the CPU image, the step to cpu-small.
TORCH_ABI_RED = TORCH_ABI_GREEN.replace("  - image-build\n", "  - image-build-cpu\n").replace(
    "      - setup.py\n", "      - setup.py\n    device: cpu-small\n"
)


def restore(current: str, green: str, step: str = "s", **kw: Any) -> str:
    return restore_step_keys(current, green, step=step, filename=TORCH_ABI, **kw)


def refused(current: str, green: str, step: str = "s", **kw: Any) -> str:
    with pytest.raises(StepRestoreError) as caught:
        restore(current, green, step, **kw)
    return str(caught.value)


def test_incident_a_gives_exactly_the_human_fix() -> None:
    restored = restore(TORCH_ABI_RED, TORCH_ABI_GREEN, AUDIT)
    assert restored == TORCH_ABI_GREEN
    assert restored_diff(TORCH_ABI_RED, restored, TORCH_ABI) == (
        f"--- a/{TORCH_ABI}\n"
        f"+++ b/{TORCH_ABI}\n"
        "@@ -1,6 +1,6 @@\n"
        " group: Torch ABI\n"
        " depends_on:\n"
        "-  - image-build-cpu\n"
        "+  - image-build\n"
        " steps:\n"
        f'   - label: "{AUDIT_LABEL}"\n'
        f"     key: {AUDIT}\n"
        "@@ -10,6 +10,5 @@\n"
        "       - csrc/\n"
        "       - cmake/\n"
        "       - setup.py\n"
        "-    device: cpu-small\n"
        "     commands:\n"
        "       - python3 .buildkite/check-torch-abi.py\n"
    )


def test_incident_a_by_label_and_in_crlf() -> None:
    red, green = TORCH_ABI_RED.replace("\n", "\r\n"), TORCH_ABI_GREEN.replace("\n", "\r\n")
    assert restore(red, green, AUDIT_LABEL) == green
    # Green's lines come with the current file's line breaks.
    assert restore(red, TORCH_ABI_GREEN, AUDIT) == green


def test_incident_a_on_the_step_itself() -> None:
    """What the caller gets when the file's value would re-route other steps: the
    file's green lines written on the step, at its indentation, after its head."""
    restored = restore(TORCH_ABI_RED, TORCH_ABI_GREEN, AUDIT, file_level=False)
    assert restored == TORCH_ABI_RED.replace("    device: cpu-small\n", "").replace(
        "    timeout_in_minutes: 5\n",
        "    timeout_in_minutes: 5\n    depends_on:\n      - image-build\n",
    )


# A file of two steps: the migration moved the file to the CPU image for the docs build
# (right) and the audit with it (wrong).
TWO_GREEN = """\
group: Misc
depends_on:
  - image-build
steps:
  - label: Audit
    key: audit
    commands:
      - audit

  - label: Docs
    key: docs
    commands:
      - make docs
"""
TWO_RED = """\
group: Misc
depends_on:
  - image-build-cpu
steps:
  - label: Audit
    key: audit
    device: cpu-small
    commands:
      - audit

  - label: Docs
    key: docs
    device: cpu-small
    commands:
      - make docs
"""


def test_two_steps_the_green_value_on_the_red_step() -> None:
    at_file = restore(TWO_RED, TWO_GREEN, "audit")
    assert at_file == TWO_RED.replace("  - image-build-cpu\n", "  - image-build\n").replace(
        "    key: audit\n    device: cpu-small\n", "    key: audit\n"
    )
    on_step = restore(TWO_RED, TWO_GREEN, "audit", file_level=False)
    assert on_step == TWO_RED.replace(
        "    key: audit\n    device: cpu-small\n",
        "    key: audit\n    depends_on:\n      - image-build\n",
    )
    data = yaml.safe_load(on_step)
    assert data["depends_on"] == ["image-build-cpu"]  # what the docs step still reads
    assert data["steps"][1] == yaml.safe_load(TWO_RED)["steps"][1]


ADDED_GREEN = """\
group: Misc
steps:
  - label: s
    key: s
    commands:
      - run
"""
ADDED_RED = """\
group: Misc
# The CPU image for every step.
depends_on: [image-build-cpu]  # migrated
steps:
  - label: s
    key: s
    commands:
      - run
"""


def test_a_file_level_key_the_migration_added_goes() -> None:
    assert restore(ADDED_RED, ADDED_GREEN) == (
        "group: Misc\n# The CPU image for every step.\nsteps:\n"
        "  - label: s\n    key: s\n    commands:\n      - run\n"
    )


def test_a_step_cannot_opt_out_of_its_file_key() -> None:
    assert refused(ADDED_RED, ADDED_GREEN, file_level=False) == MSG_NO_OWN_NONE.format(
        where=f"{TORCH_ABI}:5", key="depends_on"
    )


def test_a_file_level_key_the_migration_removed_comes_back_after_the_head() -> None:
    green = ADDED_RED.replace("image-build-cpu", "image-build")
    restored = restore(ADDED_GREEN, green)
    assert restored == ADDED_GREEN.replace(
        "group: Misc\n", "group: Misc\ndepends_on: [image-build]  # migrated\n"
    )


def test_a_file_without_a_head_gets_the_key_before_its_first_one() -> None:
    green = "depends_on:\n  - image-build\nsteps:\n  - label: s\n"
    current = "# jobs\nsteps:\n  - label: s\n"
    assert restore(current, green) == "# jobs\ndepends_on:\n  - image-build\nsteps:\n  - label: s\n"


def test_the_file_key_comes_back_at_the_current_files_indentation() -> None:
    green = "  depends_on:\n      - a\n  steps:\n      - label: s\n"
    current = "depends_on: [b]\nsteps:\n  - label: s\n"
    assert restore(current, green) == "depends_on:\n    - a\nsteps:\n  - label: s\n"


def test_a_file_key_ending_the_file_without_a_line_break() -> None:
    current = "steps:\n  - label: s\ndepends_on: [b]"
    assert restore(current, "steps:\n  - label: s\ndepends_on: [a]\n") == (
        "steps:\n  - label: s\ndepends_on: [a]"
    )


# --- the step's own value ------------------------------------------------------------


def test_an_own_value_green_did_not_have_goes_and_the_step_inherits_again() -> None:
    green = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n"
    current = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n    depends_on: [b]\n"
    assert restore(current, green) == green
    # The file's value changed too: both go back.
    moved = current.replace("depends_on: [a]\nsteps", "depends_on: [c]\nsteps")
    assert restore(moved, green) == green


def test_an_own_value_green_had_comes_back_on_the_step() -> None:
    green = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n    depends_on: [b]\n"
    current = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n"
    assert restore(current, green) == green


def test_an_empty_own_value_inherits_and_is_replaced_on_the_step() -> None:
    green = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n    depends_on: ~\n"
    current = "depends_on: [c]\nsteps:\n  - label: s\n    key: s\n    depends_on: []\n"
    # At the file level the step's own empty value is left: it inherits either way.
    assert restore(current, green) == current.replace("[c]", "[a]", 1)
    assert restore(current, green, file_level=False) == current.replace(
        "    depends_on: []\n", "    depends_on: [a]\n"
    )


def test_green_s_empty_own_value_replaces_the_current_one() -> None:
    green = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n    depends_on: []\n"
    current = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n    depends_on: [b]\n"
    assert restore(current, green) == green


def test_the_same_value_written_elsewhere_is_nothing_to_restore() -> None:
    green = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n"
    current = "steps:\n  - label: s\n    key: s\n    depends_on:\n      - a\n"
    assert refused(current, green, keys=("depends_on",)) == MSG_NOTHING.format(
        where=f"{TORCH_ABI}:2", keys="depends_on"
    )
    # Empty values read as none, at either level.
    empty = "depends_on: []\nsteps:\n  - label: s\n    key: s\n    depends_on: ~\n"
    assert refused(empty, "steps:\n  - label: s\n") == MSG_NOTHING.format(
        where=f"{TORCH_ABI}:3", keys=", ".join(ROUTE_KEYS)
    )


# --- steps that inherit nothing: not in the file's top-level `steps` ------------------

NESTED = "depends_on: [c]\nsteps:\n  - group: g\n    steps:\n      - label: s\n        key: s\n"


def test_a_nested_step_inherits_nothing_so_the_value_goes_on_the_step() -> None:
    green = "depends_on: [a]\nsteps:\n  - label: s\n    key: s\n"
    assert restore(NESTED, green) == NESTED + "        depends_on: [a]\n"


def test_green_s_nested_step_read_none_so_the_file_key_goes() -> None:
    current = "depends_on: [c]\nsteps:\n  - label: s\n    key: s\n"
    assert restore(current, NESTED) == "steps:\n  - label: s\n    key: s\n"


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "green", "side"),
    [
        (
            "depends_on: &d\n  - c\nsteps:\n  - label: s\n",
            "depends_on: [a]\nsteps:\n  - label: s\n",
            SIDE_CURRENT,
        ),
        (
            "depends_on: [c]\nsteps:\n  - label: s\n",
            "group: &g a\ndepends_on: *g\nsteps:\n  - label: s\n",
            SIDE_GREEN,
        ),
        (
            "depends_on: [c]\nsteps:\n  - label: s\n",
            "<<: {depends_on: [a]}\nsteps:\n  - label: s\n",
            SIDE_GREEN,
        ),
    ],
)
def test_anchors_aliases_and_merge_keys_at_the_file_level(
    current: str, green: str, side: str
) -> None:
    assert refused(current, green) == MSG_FILE_ANCHORS.format(
        where=TORCH_ABI, side=side, key="depends_on"
    )


def test_an_anchor_elsewhere_in_the_file_is_no_matter() -> None:
    current = "depends_on: [c]\nsteps:\n  - label: s\n  - label: t\n    env: &e {A: 1}\n"
    green = current.replace("[c]", "[a]")
    assert restore(current, green) == green


def test_an_alias_step_is_still_refused() -> None:
    current = "depends_on: [c]\nsteps:\n  - &s\n    label: s\n  - *s\n"
    assert refused(current, "steps:\n  - label: s\n") == MSG_ANCHORS.format(
        where=f"{TORCH_ABI}:3", side=SIDE_CURRENT
    )


def test_a_duplicate_file_level_key() -> None:
    twice = "depends_on: [b]\ndepends_on: [c]\nsteps:\n  - label: s\n"
    assert refused(twice, "depends_on: [a]\nsteps:\n  - label: s\n") == (
        MSG_DUPLICATE_FILE_KEY.format(where=TORCH_ABI, side=SIDE_CURRENT, key="depends_on")
    )
