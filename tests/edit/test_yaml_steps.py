"""The step editor of vLLM's CI job files: only the needed lines change, or it refuses."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.edit import yaml_steps as ys
from bot.edit.yaml_steps import (
    StepEditError,
    StepRef,
    Value,
    find_step,
    set_step_keys,
    set_steps_keys,
    steps_diff,
)

FILE = ".buildkite/test_areas/lora.yaml"
L4: dict[str, Value] = {"device": "l4", "num_devices": 1}

# Shaped like vLLM's test_areas files: a group, a file-level depends_on, steps
# with comments between keys, blank lines between steps, quoted shell commands.
LORA = """\
group: LoRA
depends_on:
  - image-build
steps:
- label: LoRA %N  # 20min per shard
  timeout_in_minutes: 30
  # Split across 4 shards; each needs one L4.
  source_file_dependencies:
  - vllm/lora
  - tests/lora
  commands:
  - pytest -v -s lora --shard-id=$$BUILDKITE_PARALLEL_JOB --num-shards=$$PARALLEL_JOB_COUNT
  parallelism: 4

- label: LoRA TP Test (Distributed)
  key: lora-tp
  timeout_in_minutes: 30
  device: l4
  num_devices: 4
  source_file_dependencies:
  - vllm/lora
  commands:
  - export VLLM_WORKER_MULTIPROC_METHOD=spawn
  - "pytest -v -s -x lora/test_chatglm3_tp.py"

- label: "Basic Models Test"
  key: basic-models
  timeout_in_minutes: 45
  num_devices: 1
  mirror_hardwares: [amdexperimental]
  source_file_dependencies:
  - vllm/
  commands:
  - 'pytest -v -s models/test_initialization.py -k "not slow"'

# Multi-node stays off Kubernetes: no device here on purpose.
- label: 2 Node Tests (4 GPUs in total)
  key: two-node
  num_devices: 2
  num_nodes: 2
  working_dir: "/vllm-workspace/tests"
  commands:
  - ./run-multi-node-test.sh /vllm-workspace/tests 2 2
"""
LORA_N, LORA_TP, BASIC, TWO_NODE = 5, 15, 26, 37


def edit(text: str, line: int, values: Mapping[str, Value]) -> str:
    return set_step_keys(text, line, values, filename=FILE)


def refusal(text: str, line: int, values: Mapping[str, Value] = L4) -> str:
    with pytest.raises(StepEditError) as caught:
        edit(text, line, values)
    return str(caught.value)


def steps(*lines: str, newline: str = "\n") -> str:
    return newline.join(["steps:", *lines, ""])


# --- adding keys -------------------------------------------------------------------


def test_adds_missing_keys_after_the_head_before_the_comment_of_the_first_block() -> None:
    edited = edit(LORA, LORA_N, L4)

    head = "  timeout_in_minutes: 30\n"
    assert edited == LORA.replace(head, head + "  device: l4\n  num_devices: 1\n", 1)


def test_adds_only_what_is_missing_after_the_last_one_line_key() -> None:
    edited = edit(LORA, BASIC, L4)

    flow = "  mirror_hardwares: [amdexperimental]\n"
    assert edited == LORA.replace(flow, flow + "  device: l4\n")


def test_keeps_the_order_of_the_values_and_writes_booleans_lowercase() -> None:
    edited = edit(LORA, TWO_NODE, {"soft_fail": True, "optional": False})

    working = '  working_dir: "/vllm-workspace/tests"\n'
    assert edited == LORA.replace(working, working + "  soft_fail: true\n  optional: false\n")


def test_the_step_indentation_is_the_one_of_its_keys() -> None:
    text = "steps:\n  -   label: a\n      commands:\n      - x\n"

    edited = edit(text, 2, {"device": "l4"})

    assert edited == "steps:\n  -   label: a\n      device: l4\n      commands:\n      - x\n"


def test_a_head_ending_the_file_without_a_line_break_gets_one_before_the_new_keys() -> None:
    text = "steps:\r\n- label: a\r\n  key: b"

    assert edit(text, 2, L4) == text + "\r\n  device: l4\r\n  num_devices: 1"


def test_the_head_stops_at_an_alias() -> None:
    text = "base: &base {device: cpu}\nsteps:\n- label: a\n  <<: *base\n  commands: [x]\n"

    edited = edit(text, 3, {"num_devices": 1})

    assert edited == text.replace("  <<:", "  num_devices: 1\n  <<:")


def test_a_string_that_would_read_as_another_type_is_double_quoted() -> None:
    edited = edit(LORA, LORA_N, {"device": "1", "queue": "yes", "empty": ""})

    new = '  device: "1"\n  queue: "yes"\n  empty: ""\n'
    assert edited == LORA.replace(
        "  timeout_in_minutes: 30\n", "  timeout_in_minutes: 30\n" + new, 1
    )


# --- changing keys -----------------------------------------------------------------


def test_changes_only_the_characters_of_the_values() -> None:
    edited = edit(LORA, LORA_TP, {"device": "h100", "num_devices": 1})

    assert edited == LORA.replace(
        "  device: l4\n  num_devices: 4\n", "  device: h100\n  num_devices: 1\n"
    )


def test_setting_what_the_step_already_holds_changes_nothing() -> None:
    assert edit(LORA, LORA_TP, {"device": "l4", "num_devices": 4, "key": "lora-tp"}) is LORA
    assert edit(LORA, LORA_TP, {}) is LORA


def test_a_value_merged_in_with_the_same_type_counts_as_held() -> None:
    text = "base: &base {device: l4}\nsteps:\n- label: a\n  <<: *base\n"

    assert edit(text, 3, {"device": "l4"}) is text


@pytest.mark.parametrize(
    ("written", "value", "expected"),
    [
        ('"cpu-small"', "l4", '"l4"'),
        ("'cpu-small'", "l4", "'l4'"),
        ("'cpu-small'", "it's", '"it\'s"'),
        ('"1"', 1, "1"),
        ("1", True, "true"),
        ("true", 1, "1"),
        ("l4", "1", '"1"'),
        ("l4", 'say "hi"', "'say \"hi\"'"),
    ],
)
def test_a_changed_value_keeps_its_quotes_when_it_still_reads_right(
    written: str, value: Value, expected: str
) -> None:
    text = steps("- label: a", f"  device: {written}  # why", "  commands: [x]")

    edited = edit(text, 2, {"device": value})

    assert edited == text.replace(f"device: {written}", f"device: {expected}")
    assert yaml.safe_load(edited)["steps"][0]["device"] == value


def test_crlf_files_stay_crlf() -> None:
    text = LORA.replace("\n", "\r\n")

    edited = edit(text, LORA_N, L4)

    assert edited == edit(LORA, LORA_N, L4).replace("\n", "\r\n")


# --- several steps, finding steps, diffs ----------------------------------------------


def test_edits_several_steps_of_a_file_from_the_bottom_up() -> None:
    edited = set_steps_keys(LORA, {LORA_N: L4, BASIC: L4}, filename=FILE)

    assert edited == edit(edit(LORA, BASIC, L4), LORA_N, L4)


def test_finds_a_step_by_key_or_label() -> None:
    assert find_step(LORA, "lora-tp", filename=FILE) == StepRef(FILE, LORA_TP)
    assert find_step(LORA, "Basic Models Test", filename=FILE) == StepRef(FILE, BASIC)


def test_find_step_refuses_unknown_and_ambiguous_names() -> None:
    text = steps("- label: a", "  key: b", "- label: b", "- label: c", "  key: [b]")

    with pytest.raises(StepEditError) as caught:
        find_step(text, "lora-tp", filename=FILE)
    assert str(caught.value) == ys.MSG_NAME_NOT_FOUND.format(filename=FILE, name="lora-tp")
    with pytest.raises(StepEditError) as caught:
        find_step(text, "b", filename=FILE)
    assert str(caught.value) == ys.MSG_NAME_AMBIGUOUS.format(filename=FILE, lines="2, 4", name="b")


def test_steps_diff_is_the_git_diff_of_the_edit() -> None:
    diff = steps_diff(LORA, edit(LORA, LORA_N, L4), FILE)

    assert diff.startswith(f"--- a/{FILE}\n+++ b/{FILE}\n@@ -4,6 +4,8 @@\n")
    assert [line for line in diff.splitlines() if line[:1] in "+-"][2:] == [
        "+  device: l4",
        "+  num_devices: 1",
    ]


# --- refusals ---------------------------------------------------------------------


def test_refuses_a_line_where_no_step_starts() -> None:
    lines = f"{LORA_N}, {LORA_TP}, {BASIC}, {TWO_NODE}"

    assert refusal(LORA, 6) == ys.MSG_STEP_NOT_FOUND.format(filename=FILE, line=6, lines=lines)


@pytest.mark.parametrize(
    "text",
    [
        "group: x\n",
        "",
        # A list of mappings under another key than `steps` holds no steps.
        "retry:\n  automatic:\n  - exit_status: -1\n    limit: 1\n",
        "steps:\n- wait\n- [label, x]\n",
        "1:\n  steps:\n  - label: a\n",
    ],
)
def test_refuses_a_file_without_steps(text: str) -> None:
    line = 3
    expected = ys.MSG_STEP_NOT_FOUND.format(filename=FILE, line=line, lines=ys.NOTHING)

    assert refusal(text, line) == expected


def test_only_the_steps_the_loader_keeps_are_steps() -> None:
    text = "steps:\n- label: a\nsteps:\n- label: b\n"

    assert refusal(text, 2) == ys.MSG_STEP_NOT_FOUND.format(filename=FILE, line=2, lines="4")


def test_refuses_a_flow_step() -> None:
    text = steps("- {label: a, device: l4}")

    assert refusal(text, 2) == ys.MSG_FLOW_STEP.format(where=f"{FILE}:2")


@pytest.mark.parametrize("first", ["-\n  label: a", "- &step\n  label: a", "- !!map\n  label: a"])
def test_refuses_a_step_whose_first_key_is_not_on_its_dash_line(first: str) -> None:
    text = steps(first, "  commands: [x]")
    line = 3 if first.startswith("-\n") else 2

    assert refusal(text, line) == ys.MSG_STEP_FORM.format(where=f"{FILE}:{line}")


def test_refuses_a_key_present_twice_even_when_its_value_is_right() -> None:
    text = steps("- label: a", "  device: cpu", "  device: l4", "  num_devices: 1")

    expected = ys.MSG_DUPLICATE_KEY.format(where=f"{FILE}:2", key="device", lines="3, 4")
    assert refusal(text, 2) == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("\n    - l4", ys.REASON_COLLECTION.format(kind="sequence")),
        ("\n    gpu: l4", ys.REASON_COLLECTION.format(kind="mapping")),
        ("*dev", ys.REASON_ALIAS),
        ("|\n    l4", ys.REASON_BLOCK),
        (">-\n    l4", ys.REASON_BLOCK),
        ("!!str l4", ys.REASON_FORM),
        ("&dev2 l4", ys.REASON_FORM),
        ('"l\\x34"', ys.REASON_FORM),
        ("cpu\n    small", ys.REASON_FORM),
        ("", ys.REASON_EMPTY),
    ],
)
def test_refuses_a_value_it_cannot_edit_with_certainty(value: str, reason: str) -> None:
    text = steps("- label: x", "  name: &dev cpu", "- label: a", f"  device: {value}", "  key: a")

    expected = ys.MSG_VALUE_FORM.format(where=f"{FILE}:4", key="device", line=5, reason=reason)
    assert refusal(text, 4, {"device": "h100"}) == expected


def test_refuses_to_add_a_key_to_a_step_that_starts_with_a_block() -> None:
    text = steps("- commands:", "  - pytest", "  label: a")

    expected = ys.MSG_NO_PLACE.format(where=f"{FILE}:2", keys="device, num_devices")
    assert refusal(text, 2) == expected


@pytest.mark.parametrize("key", ["", "num devices", "1gpu", "device:"])
def test_refuses_a_key_it_would_not_write_plainly(key: str) -> None:
    assert refusal(LORA, LORA_N, {key: 1}) == ys.MSG_INVALID_KEY.format(key=key)


@pytest.mark.parametrize("value", ["a\nb", 'it\'s "l4"', "l4\u00e9"])
def test_refuses_a_value_it_cannot_write_on_one_line(value: str) -> None:
    expected = ys.MSG_INVALID_VALUE.format(value=value, key="device")

    assert refusal(LORA, LORA_N, {"device": value}) == expected


def test_refuses_what_does_not_parse() -> None:
    message = refusal("steps:\n- label: [a\n", 2)

    assert message.startswith(ys.MSG_PARSE.format(filename=FILE, problem="while parsing"))


def test_refuses_what_the_yaml_reader_rejects() -> None:
    message = refusal("steps:\n- label: \x07\n", 2)

    assert message.startswith(ys.MSG_PARSE.format(filename=FILE, problem="unacceptable"))


@pytest.mark.parametrize("text", ["steps:\n\t- label: a\n", "steps:\n- label: a\n\t# why\n"])
def test_refuses_tabs_in_the_indentation(text: str) -> None:
    assert refusal(text, 2) == ys.MSG_TABS.format(
        filename=FILE, line=text.count("\n", 0, text.index("\t")) + 1
    )


def test_refuses_bare_cr_and_mixed_line_breaks() -> None:
    assert refusal(LORA.replace("\n", "\r"), 2) == ys.MSG_LONE_CR.format(filename=FILE)
    mixed = LORA.replace("\n", "\r\n", 1)
    assert refusal(mixed, LORA_N) == ys.MSG_MIXED_NEWLINES.format(filename=FILE)


def test_refuses_a_recursive_alias() -> None:
    text = "loop: &loop [*loop]\nsteps:\n- label: a\n"

    assert refusal(text, 3) == ys.MSG_RECURSIVE.format(filename=FILE)


def test_refuses_a_step_shared_through_an_anchor() -> None:
    # Editing the anchored step would change its other use too.
    text = "steps: &all\n- label: a\n  key: a\nnightly:\n  steps: *all\n"

    expected = ys.MSG_NOT_READ_BACK.format(where=f"{FILE}:2", problem=ys.REASON_OTHER_DATA)
    assert refusal(text, 2) == expected


def test_refuses_an_edit_that_would_not_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    # Stands for any rendering mistake: the read-back check is the last guard.
    monkeypatch.setattr(ys, "_render", lambda key, value: '"unterminated')

    message = refusal(LORA, LORA_N)

    assert message.startswith(ys.MSG_NOT_READ_BACK.format(where=f"{FILE}:{LORA_N}", problem=""))


# --- properties -------------------------------------------------------------------------

SHELL = [
    "pytest -v -s lora",
    '"pytest -v -s -x lora/test_chatglm3_tp.py"',
    "'pytest -k \"not slow\" models'",
    "export VLLM_WORKER_MULTIPROC_METHOD=spawn",
]
newlines = st.sampled_from(["\n", "\r\n"])
devices = st.sampled_from(["l4", "h100", "cpu-small", "1", "true"])
scalars = st.one_of(devices, st.integers(-2, 8), st.booleans())
quotes = st.sampled_from(["", "'", '"'])
# Built once, not inside the composites: a strategy made per example is made and checked
# again each time.
label_comments = st.sampled_from(["", "  # 20min"])
head_keys = st.lists(
    st.sampled_from(sorted(["key", "timeout_in_minutes", "device", "num_devices"])), unique=True
)
shell_lines = st.lists(st.sampled_from(SHELL), min_size=1)
edited_keys = st.lists(st.sampled_from(["device", "num_devices", "soft_fail", "key"]))


@dataclass(frozen=True)
class JobFile:
    text: str
    newline: str
    spans: tuple[tuple[int, int], ...]  # each step's (first line, line after it), 1-based


@st.composite
def step_lines(draw: st.DrawFn, index: int) -> list[str]:
    lines = [f"- label: Step {index}" + draw(label_comments)]
    head = {
        "key": f"step-{index}",
        "timeout_in_minutes": draw(st.integers(10, 90)),
        "device": draw(devices),
        "num_devices": draw(st.integers(1, 4)),
    }
    for key in draw(head_keys):
        quote = draw(quotes) if isinstance(head[key], str) else ""
        lines.append(f"  {key}: {quote}{head[key]}{quote}")
    if draw(st.booleans()):
        lines.append("  # the blocks below are reviewed by the area owners")
    if draw(st.booleans()):
        lines += ["  source_file_dependencies:", "  - vllm/", "  - tests/lora"]
    lines += [
        "  commands:",
        *(f"  - {c}" for c in draw(shell_lines)),
    ]
    return lines


@st.composite
def job_files(draw: st.DrawFn) -> JobFile:
    newline = draw(newlines)
    lines = ["group: LoRA", "depends_on:", "  - image-build", "steps:"]
    spans = []
    for index in range(draw(st.integers(1, 4))):
        if index and draw(st.booleans()):
            lines.append("")
        start = len(lines) + 1
        lines += draw(step_lines(index))
        spans.append((start, len(lines) + 1))
    end = draw(st.sampled_from(["", newline]))
    return JobFile(newline.join(lines) + end, newline, tuple(spans))


def canonical(data: object) -> str:
    # json tells 1, true and "1" apart, as the generator's YAML reader does.
    return json.dumps(data, sort_keys=True)


@settings(max_examples=300)
@given(job_files(), st.data())
def test_editing_gives_the_old_data_plus_exactly_the_changes(
    job: JobFile, data: st.DataObject
) -> None:
    which = data.draw(st.integers(0, len(job.spans) - 1))
    start, stop = job.spans[which]
    keys = data.draw(edited_keys)
    values = {key: data.draw(scalars) for key in keys}

    edited = edit(job.text, start, values)

    expected = yaml.safe_load(job.text)
    expected["steps"][which].update(values)
    assert canonical(yaml.safe_load(edited)) == canonical(expected)
    old, new = job.text.splitlines(keepends=True), edited.splitlines(keepends=True)
    added = len(new) - len(old)
    assert new[: start - 1] == old[: start - 1]
    assert new[stop - 1 + added :] == old[stop - 1 :]
    if job.newline == "\r\n":
        assert "\n" not in edited.replace("\r\n", "")
    assert edit(edited, start, values) is edited
