"""The partial revert proved by routing: the step gets its last green route back and no
other step moves, with a file-level key put back at the top of the file when it can be."""

from __future__ import annotations

import pytest

from bot.edit.yaml_restore import MSG_NO_OWN_NONE, StepRestoreError
from bot.github.changes import BranchHead
from bot.main_red import text
from bot.main_red.revert_pr import (
    Proven,
    Revert,
    prove_revert,
    restored_file_keys,
    restored_keys,
    with_file_keys,
)
from bot.routing.model import RoutedStep, route
from bot.routing.tables import default_tables
from tests.main_red.test_yaml_restore_file_level import (
    ADDED_GREEN,
    ADDED_RED,
    AUDIT,
    TORCH_ABI,
    TORCH_ABI_GREEN,
    TORCH_ABI_RED,
    TWO_GREEN,
    TWO_RED,
)
from tests.routing.trees import BUILDS, CONFIG

ENV = {"BUILDKITE_BRANCH": "main", "BUILDKITE_COMMIT": "abc"}
TABLES = default_tables()


def tree(job: str) -> dict[str, str]:
    return {
        ".buildkite/ci_config.yaml": CONFIG,
        ".buildkite/test_areas/builds.yaml": BUILDS,
        TORCH_ABI: job,
    }


def routed(job: str, key: str) -> RoutedStep:
    steps = route(tree(job), env=ENV, tables=TABLES).steps
    return next(step for step in steps if step.key == key)


def where(step: RoutedStep) -> tuple[object, ...]:
    return (step.queue, step.plugin, step.image_suffix, step.gpus, step.depends_on)


def prove(red: str, green: str, step: str) -> Proven:
    before = routed(green, step)
    return prove_revert(
        tree(red), TORCH_ABI, green, step=step, before=before, env=ENV, tables=TABLES
    )


def test_incident_a_is_proved_with_the_file_level_value_back() -> None:
    assert routed(TORCH_ABI_RED, AUDIT).queue != routed(TORCH_ABI_GREEN, AUDIT).queue
    proven = prove(TORCH_ABI_RED, TORCH_ABI_GREEN, AUDIT)
    assert proven == Proven(TORCH_ABI_GREEN, routed(TORCH_ABI_GREEN, AUDIT), ())
    assert restored_keys(TORCH_ABI_RED, proven.text, AUDIT) == ("device", "depends_on")
    assert restored_file_keys(TORCH_ABI_RED, proven.text) == ("depends_on",)


def test_when_the_file_value_would_move_another_step_the_step_gets_its_own() -> None:
    proven = prove(TWO_RED, TWO_GREEN, "audit")
    assert proven.moved == ()
    assert proven.restored == routed(TWO_GREEN, "audit")
    assert proven.text == TWO_RED.replace(
        "    key: audit\n    device: cpu-small\n",
        "    key: audit\n    depends_on:\n      - image-build\n",
    )
    assert where(routed(proven.text, "docs")) == where(routed(TWO_RED, "docs"))  # kept
    assert restored_keys(TWO_RED, proven.text, "audit") == ("device", "depends_on")
    assert restored_file_keys(TWO_RED, proven.text) == ()


def test_a_step_level_restore_is_proved_as_before() -> None:
    green = TORCH_ABI_GREEN.replace("    timeout_in_minutes: 5\n", "    device: h200\n")
    red = TORCH_ABI_GREEN.replace("    timeout_in_minutes: 5\n", "    device: cpu-small\n")
    proven = prove(red, green, AUDIT)
    assert proven == Proven(green, routed(green, AUDIT), ())
    assert restored_file_keys(red, proven.text) == ()


def test_a_route_not_back_is_said() -> None:
    green = TORCH_ABI_GREEN.replace("    timeout_in_minutes: 5\n", "    device: h200\n")
    before = routed(TORCH_ABI_RED, AUDIT)  # not the route green's keys give
    proven = prove_revert(
        tree(TORCH_ABI_RED), TORCH_ABI, green, step=AUDIT, before=before, env=ENV, tables=TABLES
    )
    assert proven.restored is None


def test_moving_others_with_no_own_value_possible_is_refused() -> None:
    red = ADDED_RED + "\n  - label: t\n    key: t\n    device: cpu-small\n"
    green = ADDED_GREEN + "\n  - label: t\n    key: t\n    device: cpu-small\n"
    with pytest.raises(StepRestoreError) as caught:
        prove(red, green, "s")
    assert str(caught.value) == MSG_NO_OWN_NONE.format(where=f"{TORCH_ABI}:5", key="depends_on")


def test_a_nested_or_label_named_step_reads_its_own_keys() -> None:
    nested = "depends_on: [c]\nsteps:\n  - group: g\n    steps:\n      - label: My Step\n"
    restored = nested + "        device: l4\n"
    assert restored_keys(nested, restored, "my-step") == ("device",)
    assert restored_keys(nested, restored, "nope") == ()


def revert(file_keys: tuple[str, ...]) -> Revert:
    base = BranchHead("main", "b" * 40, "t" * 40)
    return Revert(AUDIT, "c" * 40, TORCH_ABI, "", (), base, "", None, file_keys)


def test_the_pr_body_names_the_file_level_key() -> None:
    marker = text.MARKER_REVERT.format(step=AUDIT)
    body = "intro\n\ntable\n\n" + marker
    paragraph = text.REVERT_FILE_KEYS.format(keys="`depends_on`", file=TORCH_ABI)
    assert with_file_keys(body, revert(("depends_on",))) == (
        "intro\n\ntable\n\n" + paragraph + "\n\n" + marker
    )
    assert with_file_keys(body, revert(())) == body
