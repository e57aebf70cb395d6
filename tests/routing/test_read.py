"""Reading the tree: refused YAML, non-step content, the config, and job file discovery."""

from __future__ import annotations

import pytest

from bot.routing import read, yaml_nodes
from bot.routing.model import route
from bot.routing.problems import RoutingProblem
from bot.routing.read import job_dirs_of
from bot.routing.tables import default_tables
from tests.routing.trees import CONFIG, JOB, files, routes


def fatal(job: str) -> list[RoutingProblem]:
    return [problem for problem in routes(job).problems if problem.fatal]


@pytest.mark.parametrize(
    ("job", "line", "column", "message"),
    [
        ("steps:\n  - label: t\n\tkey: x\n", 3, 1, yaml_nodes.MSG_TAB),
        ("steps: []\n---\nsteps: []\n", 3, 1, yaml_nodes.MSG_MANY_DOCUMENTS),
        ("", 1, 1, yaml_nodes.MSG_NO_DOCUMENT),
        (
            "steps:\n  - &s\n    label: t\n  - *s\n",
            4,
            5,
            yaml_nodes.MSG_ALIAS,
        ),
        ("steps: &s [*s]\n", 1, 12, yaml_nodes.MSG_ALIAS),  # holds itself: refused, no loop
        ("steps:\n  - label: &l t\n    key: *l\n", 3, 10, yaml_nodes.MSG_ALIAS),
        ("steps:\n  - label: t\n    <<: {key: x}\n", 3, 5, yaml_nodes.MSG_MERGE_KEY),
        (
            "steps:\n  - label: t\n    label: u\n",
            3,
            5,
            yaml_nodes.MSG_DUPLICATE_KEY.format(key="label", first=2),
        ),
        ("steps:\n  - label: t\n    1: x\n", 3, 5, yaml_nodes.MSG_KEY_NOT_TEXT),
        ("- label: t\n", 1, 1, read.MSG_NOT_A_MAPPING),
        ("steps:\n  - label: t\nwait: true\n", 3, 7, read.MSG_UNKNOWN_TOP_LEVEL.format(key="wait")),
        ("steps: {label: t}\n", 1, 8, read.MSG_STEPS_NOT_A_LIST),
        ("steps:\n  - wait\n", 2, 5, read.MSG_STEP_NOT_A_MAPPING),
        ("steps:\n  - key: x\n", 2, 5, read.MSG_NO_LABEL),
        (
            "steps:\n  - label: t\n    num_devices: two\n",
            3,
            18,
            read.MSG_BAD_FIELD.format(field="num_devices", expected="a whole number"),
        ),
    ],
)
def test_refused_input_is_a_fatal_problem_with_its_place(
    job: str, line: int, column: int, message: str
) -> None:
    assert fatal(job) == [RoutingProblem(JOB, line, column, message, fatal=True)]


def test_an_unused_anchor_is_fine() -> None:
    assert routes("steps:\n  - &s\n    label: t\n    depends_on: [image-build]\n").problems == ()


def test_a_syntax_error_is_refused_with_its_place() -> None:
    [problem] = fatal("steps: [\n")
    assert (problem.file, problem.line, problem.fatal) == (JOB, 2, True)
    assert problem.message.startswith(yaml_nodes.MSG_SYNTAX.format(problem=""))
    assert str(problem).startswith(f"{JOB}:2:")


def test_a_character_yaml_refuses_is_placed() -> None:
    [problem] = fatal("steps:\n  - label: \x07\n")
    assert (problem.line, problem.column) == (2, 12)
    [problem] = fatal("steps:\n  - label: é\x07\n")
    assert (problem.line, problem.column) == (2, 13)  # characters, not UTF-8 bytes
    assert problem.message.startswith(yaml_nodes.MSG_SYNTAX.format(problem=""))


def test_a_job_file_without_steps_has_none() -> None:
    assert [s for s in routes("group: Empty\n").steps if s.file == JOB] == []


def test_an_unknown_anchor_is_refused() -> None:
    [problem] = fatal("steps:\n  - *nope\n")
    assert problem.message.startswith(yaml_nodes.MSG_SYNTAX.format(problem=""))


def test_a_refused_step_leaves_the_others() -> None:
    result = routes("steps:\n  - wait\n  - label: t\n    depends_on: [image-build]\n")
    assert [step.key for step in result.steps if step.file == JOB] == ["t"]


def test_no_config_is_fatal() -> None:
    result = route({JOB: "steps: []\n"}, env={}, tables=default_tables())
    assert result.steps == ()
    assert result.problems == (RoutingProblem(read.CI_CONFIG, 0, 0, read.MSG_NO_CONFIG, True),)


def test_a_config_without_job_dirs_reads_nothing() -> None:
    tree = files("steps:\n  - label: t\n")
    tree[read.CI_CONFIG] = "name: x\nregistries: r\n"
    result = route(tree, env={}, tables=default_tables())
    assert result.steps == ()
    assert [p.message for p in result.problems] == [read.MSG_NO_JOB_DIRS]


def test_config_problems_are_fatal() -> None:
    tree = files("steps: []\n")
    tree[read.CI_CONFIG] = CONFIG + "surprise: 1\n"
    messages = [p.message for p in route(tree, env={}, tables=default_tables()).problems]
    assert messages == [read.MSG_UNKNOWN_CONFIG_KEY.format(key="surprise")]
    tree[read.CI_CONFIG] = "- no\n"
    assert route(tree, env={}, tables=default_tables()).steps == ()


def test_only_yaml_files_under_the_job_dirs_are_read() -> None:
    tree = files("steps: []\n")
    tree[".buildkite/test_areas/deep/more.yaml"] = "steps:\n  - label: deep\n"
    tree[".buildkite/test_areas/old.yml"] = "steps:\n  - label: yml\n"
    tree[".buildkite/elsewhere/x.yaml"] = "steps:\n  - label: elsewhere\n"
    labels = {step.label for step in route(tree, env={}, tables=default_tables()).steps}
    assert "deep" in labels
    assert not labels & {"yml", "elsewhere"}


def test_a_config_without_registry_gives_no_image() -> None:
    tree = files("steps:\n  - label: t\n")
    tree[read.CI_CONFIG] = "job_dirs: [.buildkite/test_areas]\n"
    step = route(tree, env={}, tables=default_tables()).steps[0]
    assert (step.image_suffix, step.image) == ("", None)
    tree[read.CI_CONFIG] = "job_dirs: [.buildkite/test_areas]\nregistries: r\n"
    assert route(tree, env={}, tables=default_tables()).steps[0].image is None


def test_fields_of_every_kind_are_read() -> None:
    job = (
        "steps:\n  - label: t\n    commands: [a]\n    soft_fail: [{exit_status: 1}]\n"
        "    env: {A: b}\n    agent_tags: [x]\n    optional: false\n"
    )
    step = routes(job).steps[0]
    assert (step.soft_fail, step.optional) == (True, False)


def test_a_table_override_step_field_is_taken_as_is() -> None:
    import dataclasses

    tables = dataclasses.replace(
        default_tables(), step_fields=default_tables().step_fields | {"new_field"}
    )
    result = route(files("steps:\n  - label: t\n    new_field: [1]\n"), env={}, tables=tables)
    assert not [p for p in result.problems if "new_field" in p.message]


def test_the_job_dirs_of_a_config_and_of_one_that_cannot_be_read() -> None:
    assert job_dirs_of("job_dirs:\n  - .buildkite/test_areas\n") == (".buildkite/test_areas",)
    assert job_dirs_of("job_dirs: [\n") == ()
