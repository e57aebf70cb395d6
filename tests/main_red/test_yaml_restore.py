"""The partial revert: one step's routing keys put back as they were, every other byte kept."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from bot.edit import yaml_restore
from bot.edit.yaml_restore import (
    MSG_AMBIGUOUS,
    MSG_ANCHORS,
    MSG_DUPLICATE_KEY,
    MSG_FIRST_LINE,
    MSG_FLOW_STEP,
    MSG_GREEN_STEP_NOT_FOUND,
    MSG_LONE_CR,
    MSG_NO_PLACE,
    MSG_NOT_READ_BACK,
    MSG_NOTHING,
    MSG_PARSE,
    MSG_STEP_NOT_FOUND,
    REASON_OTHER_DATA,
    ROUTE_KEYS,
    SIDE_CURRENT,
    SIDE_GREEN,
    StepRestoreError,
    restore_step_keys,
    restored_diff,
)

FILE = ".buildkite/test_areas/misc.yaml"
AUDIT = "torch-stable-abi-audit"

GREEN = """\
group: Miscellaneous
steps:
  - label: Torch Stable ABI Audit
    key: torch-stable-abi-audit
    depends_on:
      - image-build
    commands:
      - bash .buildkite/scripts/audit.sh

  - label: Python-only Installation Test
    key: python-only-install
    # Needs a GPU to import vllm.
    source_file_dependencies:
      - setup.py
    commands:
      - bash standalone_tests/python_only_compile.sh
"""

# A migration PR that wrote the step's keys on the step itself (incident A's real file has
# its depends_on at the top level: see test_yaml_restore_file_level.py): the audit moved to
# the small CPU queue and the CPU image (wrong), and the install test moved to the L4 pool
# (right, to be kept).
CURRENT = """\
group: Miscellaneous
steps:
  - label: Torch Stable ABI Audit
    key: torch-stable-abi-audit
    device: cpu-small
    depends_on:
      - image-build-cpu
    commands:
      - bash .buildkite/scripts/audit.sh

  - label: Python-only Installation Test
    key: python-only-install
    device: l4
    num_devices: 1
    # Needs a GPU to import vllm.
    source_file_dependencies:
      - setup.py
    commands:
      - bash standalone_tests/python_only_compile.sh
"""


def restore(current: str, green: str, step: str = "s", **kw: Any) -> str:
    return restore_step_keys(current, green, step=step, filename=FILE, **kw)


def changed_lines(diff: str) -> list[str]:
    return [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def refused(current: str, green: str, step: str = "s", **kw: Any) -> str:
    with pytest.raises(StepRestoreError) as caught:
        restore(current, green, step, **kw)
    return str(caught.value)


def test_step_level_keys_are_restored_on_the_step_only() -> None:
    restored = restore(CURRENT, GREEN, AUDIT)
    diff = restored_diff(CURRENT, restored, FILE)
    assert changed_lines(diff) == [
        "-    device: cpu-small",
        "-      - image-build-cpu",
        "+      - image-build",
    ]
    assert diff.startswith(f"--- a/{FILE}\n+++ b/{FILE}\n")
    data = yaml.safe_load(restored)
    assert data["steps"][0] == yaml.safe_load(GREEN)["steps"][0]
    assert data["steps"][1] == yaml.safe_load(CURRENT)["steps"][1]


def test_step_level_keys_by_label_and_in_crlf() -> None:
    crlf, green = CURRENT.replace("\n", "\r\n"), GREEN.replace("\n", "\r\n")
    restored = restore(crlf, green, "Torch Stable ABI Audit")
    assert restored == restore(CURRENT, GREEN, AUDIT).replace("\n", "\r\n")
    # A green file with other line breaks gives lines with the current file's.
    assert restore(crlf, GREEN, AUDIT) == restored


def test_no_diff_when_equal() -> None:
    assert restored_diff(GREEN, GREEN, FILE) == ""


STEP = """\
steps:
  - label: s
    key: s
{body}    commands:
      - run
"""


def step(body: str) -> str:
    return STEP.format(body=body)


def test_a_key_green_had_is_added_after_the_head() -> None:
    deps = "    depends_on:\n      - image-build\n"
    current = step("    # where it runs\n" + deps)
    green = step("    num_devices: 1\n    device: l4\n" + deps)
    restored = restore(current, green)
    # In the order of the keys asked for, before the comment of the first nested block.
    assert restored == step("    device: l4\n    num_devices: 1\n    # where it runs\n" + deps)


def test_comments_between_keys_and_on_kept_keys_stay() -> None:
    current = step(
        "    device: cpu  # moved\n    # GPU count\n    num_devices: 2\n\n    no_gpu: true\n"
    )
    green = step("    # GPU count\n    num_devices: 4\n    no_gpu: true\n")
    restored = restore(current, green)
    assert restored == step("    # GPU count\n    num_devices: 4\n\n    no_gpu: true\n")


def test_flow_style_comes_back_as_green_wrote_it() -> None:
    current = step("    depends_on: [image-build-cpu]\n")
    green = step("    depends_on:\n      - image-build  # the CUDA image\n")
    assert restore(current, green) == green
    assert restore(green, current) == current


def test_green_lines_are_moved_to_the_current_indentation() -> None:
    green = "steps:\n- label: s\n  mirror:\n    amd:\n      device: mi325_1\n\n      dind: false\n"
    current = "steps:\n      - label: s\n        mirror: {amd: {device: mi250_1}}\n"
    restored = restore(current, green)
    assert restored == (
        "steps:\n      - label: s\n        mirror:\n          amd:\n"
        "            device: mi325_1\n\n            dind: false\n"
    )
    assert restore(restored, current) == current


def test_a_comment_less_indented_than_the_shift_loses_what_it_has() -> None:
    green = "steps:\n    - label: s\n      depends_on:\n  # odd\n        - b\n"
    current = "steps:\n  - label: s\n    depends_on: [a]\n"
    assert restore(current, green) == "steps:\n  - label: s\n    depends_on:\n# odd\n      - b\n"


def test_a_last_key_without_a_final_line_break() -> None:
    current = "steps:\n  - label: s\n    commands: [x]\n    device: cpu"
    assert restore(current, "steps:\n  - label: s\n    commands: [x]\n") == (
        "steps:\n  - label: s\n    commands: [x]"
    )
    replaced = restore(current, "steps:\n  - label: s\n    device: l4\n")
    assert replaced == "steps:\n  - label: s\n    commands: [x]\n    device: l4"
    head_only = "steps:\n  - label: s"
    assert restore(head_only, "steps:\n  - label: s\n    device: l4\n") == (
        "steps:\n  - label: s\n    device: l4"
    )
    from_last_line = "steps:\n  - label: s\n    key: s\n    device: l4"
    assert restore("steps:\n  - label: s\n    key: s\n", from_last_line) == (
        "steps:\n  - label: s\n    key: s\n    device: l4\n"
    )


def test_a_block_scalar_keeps_the_blank_lines_after_it() -> None:
    current = step("    device: |\n      cpu\n\n")
    green = step("    device: l4\n")
    assert restore(current, green) == step("    device: l4\n\n")


def test_only_the_keys_asked_and_repeats_once() -> None:
    current = step("    device: cpu\n    num_devices: 2\n")
    green = step("    device: l4\n    num_devices: 1\n")
    restored = restore(current, green, keys=("num_devices", "num_devices"))
    assert restored == step("    device: cpu\n    num_devices: 1\n")


def test_a_step_that_does_not_start_with_a_one_line_key() -> None:
    current = "steps:\n  - commands:\n      - run\n    label: s\n"
    green = "steps:\n  - label: s\n    device: l4\n"
    assert refused(current, green) == MSG_NO_PLACE.format(where=f"{FILE}:2", keys="device")


# --- refusals ----------------------------------------------------------------------


def test_nothing_to_restore() -> None:
    assert refused(GREEN, GREEN, AUDIT) == MSG_NOTHING.format(
        where=f"{FILE}:3", keys=", ".join(ROUTE_KEYS)
    )


def test_step_not_found() -> None:
    assert refused(GREEN, GREEN, "nope") == MSG_STEP_NOT_FOUND.format(filename=FILE, name="nope")
    assert refused("", GREEN, "nope") == MSG_STEP_NOT_FOUND.format(filename=FILE, name="nope")
    assert refused(step(""), "steps: []\n") == MSG_GREEN_STEP_NOT_FOUND.format(
        filename=FILE, name="s"
    )


def test_ambiguous_step() -> None:
    twice = "steps:\n  - label: s\n  - label: t\n    key: s\n"
    assert refused(twice, twice) == MSG_AMBIGUOUS.format(
        filename=FILE, side=SIDE_CURRENT, lines="2, 3", name="s"
    )


def test_parse_errors_say_which_file() -> None:
    assert refused("steps: [\n", GREEN).startswith(
        MSG_PARSE.format(filename=FILE, side=SIDE_CURRENT, problem="")
    )
    assert refused(GREEN, "a: b: c\n", AUDIT).startswith(
        MSG_PARSE.format(filename=FILE, side=SIDE_GREEN, problem="")
    )


def test_bare_cr() -> None:
    assert refused("steps:\r  - label: s\r", GREEN) == MSG_LONE_CR.format(filename=FILE)


def test_flow_step() -> None:
    flow = "steps:\n  - {label: s, device: l4}\n"
    assert refused(flow, step("")) == MSG_FLOW_STEP.format(where=f"{FILE}:2", side=SIDE_CURRENT)


def test_a_key_on_the_first_line() -> None:
    first = "steps:\n  - device: l4\n    label: s\n"
    assert refused(first, step("")) == MSG_FIRST_LINE.format(
        where=f"{FILE}:2", side=SIDE_CURRENT, key="device"
    )
    assert refused(step(""), first) == MSG_FIRST_LINE.format(
        where=f"{FILE}:2", side=SIDE_GREEN, key="device"
    )


@pytest.mark.parametrize(
    ("current", "line"),
    [
        ("base: &b {device: l4}\nsteps:\n  - label: s\n    <<: *b\n", 3),
        ("steps:\n  - label: s\n    <<: {device: l4}\n", 2),
        ("steps:\n  - label: s\n    depends_on: &d [a]\n  - label: t\n    depends_on: *d\n", 2),
        ("steps:\n  - &s\n    label: s\n  - *s\n", 2),
    ],
)
def test_anchors_aliases_and_merge_keys(current: str, line: int) -> None:
    message = MSG_ANCHORS.format(where=f"{FILE}:{line}", side=SIDE_CURRENT)
    assert refused(current, step("")) == message


def test_an_anchor_on_the_next_step_is_not_in_this_one() -> None:
    current = "steps:\n  - label: s\n    device: l4\n  - &t\n    label: t\n"
    restored = restore(current, "steps:\n  - label: s\n")
    assert restored == "steps:\n  - label: s\n  - &t\n    label: t\n"


def test_an_alias_inside_its_own_anchor() -> None:
    recursive = "steps: &a\n  - label: s\n    again: *a\n"
    assert refused(step(""), recursive) == MSG_ANCHORS.format(where=FILE, side=SIDE_GREEN)


def test_a_duplicate_key() -> None:
    twice = step("    device: l4\n    device: cpu\n")
    assert refused(twice, step("")) == MSG_DUPLICATE_KEY.format(
        where=f"{FILE}:2", side=SIDE_CURRENT, key="device"
    )


def test_a_kept_block_scalar_that_would_swallow_the_blank_lines_is_refused() -> None:
    current = step("    device: |+\n      cpu\n\n")
    green = step("    device: |+\n      l4\n")
    assert refused(current, green).startswith(
        MSG_NOT_READ_BACK.format(where=f"{FILE}:2", problem=REASON_OTHER_DATA)
    )


def test_the_last_guard_refuses_text_that_does_not_parse() -> None:
    with pytest.raises(StepRestoreError) as caught:
        yaml_restore._check("a: [\n", {}, "f:1")
    assert str(caught.value).startswith(MSG_NOT_READ_BACK.format(where="f:1", problem=""))


# --- property: any subset of keys added, removed or changed -------------------------

_VALUES: dict[str, st.SearchStrategy[str]] = {
    "device": st.sampled_from(["    device: l4\n", "    device: cpu-small  # cheap\n"]),
    "num_devices": st.sampled_from(["    num_devices: 1\n", "    num_devices: 4\n"]),
    "num_nodes": st.sampled_from(["    num_nodes: 2\n"]),
    "no_plugin": st.sampled_from(["    no_plugin: true\n", "    no_plugin: false\n"]),
    "no_gpu": st.sampled_from(["    no_gpu: true\n"]),
    "depends_on": st.sampled_from(
        [
            "    depends_on:\n      - image-build\n",
            "    depends_on: [image-build-cpu]\n",
            "    depends_on:\n      # built first\n      - image-build\n      - other\n",
        ]
    ),
    "mirror": st.sampled_from(
        ["    mirror:\n      amd:\n        device: mi325_1\n", "    mirror: {amd: {device: x}}\n"]
    ),
}
_Step = list[tuple[str, str]]


@st.composite
def _steps(draw: st.DrawFn) -> _Step:
    keys = draw(st.permutations(ROUTE_KEYS))
    present = [k for k in keys if draw(st.booleans())]
    return [(k, draw(_VALUES[k])) for k in present]


def _text(body: _Step, *, other: str) -> str:
    lines = "".join(text for _, text in body)
    return (
        "steps:\n  - label: s\n    key: s\n"
        + lines
        + "    # the commands\n    commands:\n      - run\n\n"
        + f"  - label: t\n    device: {other}\n"
    )


def _expected(current: _Step, green: _Step) -> str:
    """The module's rule written out: changed keys replaced or removed where they are,
    new ones after the head (the leading one-line keys), in ``ROUTE_KEYS`` order.

    Two different texts of one key here never read as the same value.
    """
    theirs, ours = dict(green), dict(current)
    new = [(k, theirs[k]) for k in ROUTE_KEYS if k in theirs and k not in ours]
    head = 0
    while head < len(current) and current[head][1].count("\n") == 1:
        head += 1
    out: _Step = [] if head else list(new)
    for index, (key, _) in enumerate(current):
        if key in theirs:
            out.append((key, theirs[key]))
        if index == head - 1:
            out.extend(new)
    return _text(out, other="l4")


@given(_steps(), _steps())
def test_any_keys_restored_keep_every_other_line(current: _Step, green: _Step) -> None:
    before, after = _text(current, other="l4"), _text(green, other="cpu")
    if dict(current) == dict(green):
        with pytest.raises(StepRestoreError):
            restore(before, after)
        return
    restored = restore(before, after)
    assert restored == _expected(current, green)
    assert yaml.safe_load(restored) == {
        "steps": [yaml.safe_load(after)["steps"][0], yaml.safe_load(before)["steps"][1]]
    }
