"""Reading the tree as vLLM's generator does: what it refuses is fatal with its place, what it
accepts (aliases, merge keys, ``depends_on: ~``, coercible values, keys it ignores) is read."""

from __future__ import annotations

import dataclasses

import pytest

from bot.routing import read, yaml_nodes
from bot.routing.model import route
from bot.routing.problems import RoutingProblem
from bot.routing.read import job_dirs_of
from bot.routing.tables import default_tables
from tests.routing.trees import CONFIG, JOB, files, routes


def fatal(job: str) -> list[RoutingProblem]:
    return [problem for problem in routes(job).problems if problem.fatal]


def job_steps(job: str) -> list[str]:
    return [step.key for step in routes(job).steps if step.file == JOB]


def bad(field: str, reason: str) -> str:
    return read.MSG_BAD_FIELD.format(field=field, reason=reason)


@pytest.mark.parametrize(
    ("job", "line", "column", "message"),
    [
        ("steps: []\n---\nsteps: []\n", 3, 1, yaml_nodes.MSG_MANY_DOCUMENTS),
        ("", 1, 1, yaml_nodes.MSG_NO_DOCUMENT),
        ("steps: &s [*s]\n", 1, 8, yaml_nodes.MSG_RECURSIVE),  # holds itself: no loop
        ("steps:\n  - label: t\n    1: x\n", 3, 5, yaml_nodes.MSG_KEY_NOT_TEXT),
        ("- label: t\n", 1, 1, read.MSG_NOT_A_MAPPING),
        ("steps: {label: t}\n", 1, 8, read.MSG_STEPS_NOT_A_LIST),
        ("steps:\n  - wait\n", 2, 5, read.MSG_STEP_NOT_A_MAPPING),
        ("steps:\n  - key: x\n", 2, 5, read.MSG_NO_LABEL),
        ("steps:\n  - label: ~\n", 2, 12, bad("label", "Input should be a valid string")),
        # The generator's list of refusals (ci-routing.md).
        (
            "steps:\n  - label: t\n    depends_on: image-build\n",
            3,
            17,
            bad("depends_on", "Input should be a valid list"),
        ),
        (
            "steps:\n  - label: t\n    soft_fail:\n      - exit_status: 1\n",
            4,
            7,
            bad("soft_fail", "Input should be a valid boolean"),
        ),
        (
            "steps:\n  - label: t\n    num_devices: two\n",
            3,
            18,
            bad(
                "num_devices",
                "Input should be a valid integer, unable to parse string as an integer",
            ),
        ),
        (
            "steps:\n  - label: t\n    group: ~\n",
            3,
            12,
            bad("group", "Input should be a valid string"),
        ),
        ("steps:\n  - label: t\n    num_nodes: 2\n", 3, 16, read.MSG_NODES_WITHOUT_DEVICES),
        ("steps:\n  - label: t\n    concurrency: 1\n", 3, 18, read.MSG_CONCURRENCY_PAIR),
        ("steps:\n  - label: t\n    concurrency_group: g\n", 3, 24, read.MSG_CONCURRENCY_PAIR),
        (
            "steps:\n  - label: t\n    concurrency: 1\n    concurrency_group: ' '\n",
            4,
            24,
            read.MSG_CONCURRENCY_GROUP_BLANK,
        ),
        (
            "steps:\n  - label: t\n    retry:\n      automatic: 3\n",
            4,
            7,
            read.MSG_RETRY_AUTOMATIC,
        ),
        ("group: [x]\nsteps: []\n", 1, 8, read.MSG_FILE_GROUP),
        ("depends_on: image-build\nsteps:\n  - label: t\n", 1, 13, read.MSG_FILE_DEPENDS_ON),
    ],
)
def test_what_the_generator_refuses_is_fatal_with_its_place(
    job: str, line: int, column: int, message: str
) -> None:
    assert fatal(job) == [RoutingProblem(JOB, line, column, message, fatal=True)]


def test_a_file_depends_on_no_step_inherits_is_never_read() -> None:
    job = "depends_on: image-build\nsteps:\n  - label: t\n    depends_on: [image-build]\n"
    assert fatal(job) == []
    assert fatal("depends_on: image-build\nsteps: []\n") == []


def test_a_refused_field_takes_its_step_out() -> None:
    assert job_steps("steps:\n  - label: t\n    soft_fail: [1]\n  - label: u\n") == ["u"]


@pytest.mark.parametrize(
    ("job", "field", "value"),
    [
        ("    num_devices: '2'\n", "num_devices", 2),
        ("    no_plugin: 'yes'\n", "plugin", None),
        ("    device: ~\n", "device", None),
        ("    soft_fail: 1\n", "soft_fail", True),
    ],
)
def test_values_the_generator_coerces_are_read_as_it_reads_them(
    job: str, field: str, value: object
) -> None:
    [step] = [s for s in routes(f"steps:\n  - label: t\n{job}").steps if s.file == JOB]
    assert not fatal(f"steps:\n  - label: t\n{job}")
    assert getattr(step, field) == value


def test_aliases_anchors_and_merge_keys_read_as_safe_load_reads_them() -> None:
    job = (
        "steps:\n"
        "  - &base\n"
        "    label: First\n"
        "    device: cpu-small\n"
        "    source_file_dependencies: &deps\n"
        "      - vllm/\n"
        "      - tests/cpu\n"
        "  - <<: *base\n"
        "    label: Second\n"
        "  - label: Third\n"
        "    source_file_dependencies: *deps\n"
    )
    result = routes(job)
    assert not [p for p in result.problems if p.fatal]
    by_key = {s.key: s for s in result.steps if s.file == JOB}
    assert set(by_key) == {"first", "second", "third"}
    assert by_key["second"].device == "cpu-small"
    assert by_key["second"].line == 8  # the item's own line
    assert by_key["third"].source_file_dependencies == ("vllm/", "tests/cpu")


def test_a_key_written_twice_keeps_the_last_and_is_reported() -> None:
    result = routes("steps:\n  - label: t\n    label: u\n    depends_on: [image-build]\n")
    assert [s.label for s in result.steps if s.file == JOB] == ["u"]
    message = yaml_nodes.MSG_DUPLICATE_KEY.format(key="label", first=2)
    assert result.problems == (RoutingProblem(JOB, 3, 5, message),)


def test_unknown_top_level_keys_are_reported_not_fatal() -> None:
    result = routes("depends_on: [image-build]\nsteps:\n  - label: t\nwait: true\n")
    message = read.MSG_UNKNOWN_TOP_LEVEL.format(key="wait")
    assert result.problems == (RoutingProblem(JOB, 4, 7, message),)
    assert job_steps("steps:\n  - label: t\nwait: true\n") == ["t"]


def test_a_syntax_error_is_refused_with_its_place() -> None:
    [problem] = fatal("steps: [\n")
    assert (problem.file, problem.line, problem.fatal) == (JOB, 2, True)
    assert problem.message.startswith(yaml_nodes.MSG_SYNTAX.format(problem=""))
    assert str(problem).startswith(f"{JOB}:2:")


def test_a_tab_in_indentation_is_what_yaml_refuses_and_a_tab_in_text_is_fine() -> None:
    [problem] = fatal("steps:\n  - label: t\n\tkey: x\n")
    assert problem.message.startswith(yaml_nodes.MSG_SYNTAX.format(problem=""))
    assert job_steps('steps:\n  - label: "a\\tb"\n    key: k\n') == ["k"]


def test_a_bad_merge_is_refused() -> None:
    [problem] = fatal("steps:\n  - label: t\n    <<: 3\n")
    assert problem.message.startswith(yaml_nodes.MSG_SYNTAX.format(problem=""))


def test_a_character_yaml_refuses_is_placed() -> None:
    [problem] = fatal("steps:\n  - label: \x07\n")
    assert (problem.line, problem.column) == (2, 12)
    [problem] = fatal("steps:\n  - label: é\x07\n")
    assert (problem.line, problem.column) == (2, 13)  # characters, not UTF-8 bytes
    assert problem.message.startswith(yaml_nodes.MSG_SYNTAX.format(problem=""))


def test_a_job_file_without_steps_has_none() -> None:
    assert job_steps("group: Empty\n") == []


def test_an_unknown_anchor_is_refused() -> None:
    [problem] = fatal("steps:\n  - *nope\n")
    assert problem.message.startswith(yaml_nodes.MSG_SYNTAX.format(problem=""))


def test_a_refused_step_leaves_the_others() -> None:
    assert job_steps("steps:\n  - wait\n  - label: t\n    depends_on: [image-build]\n") == ["t"]


def test_no_config_is_fatal() -> None:
    result = route({JOB: "steps: []\n"}, env={}, tables=default_tables())
    assert result.steps == ()
    assert result.problems == (RoutingProblem(read.CI_CONFIG, 0, 0, read.MSG_NO_CONFIG, True),)


def test_a_config_without_job_dirs_reads_nothing() -> None:
    tree = files("steps:\n  - label: t\n")
    tree[read.CI_CONFIG] = "name: x\nregistries: r\nrepositories: {main: m}\n"
    result = route(tree, env={}, tables=default_tables())
    assert result.steps == ()
    assert [(p.message, p.fatal) for p in result.problems] == [(read.MSG_NO_JOB_DIRS, True)]


@pytest.mark.parametrize("key", ["name", "registries", "repositories"])
def test_a_config_the_generator_refuses_is_fatal(key: str) -> None:
    tree = files("steps: []\n")
    tree[read.CI_CONFIG] = "".join(
        line + "\n" for line in CONFIG.splitlines() if not line.startswith(key)
    )
    if key == "repositories":  # its entries are indented below it
        tree[read.CI_CONFIG] = tree[read.CI_CONFIG].replace("  main: main-repo\n", "")
        tree[read.CI_CONFIG] = tree[read.CI_CONFIG].replace("  premerge: premerge-repo\n", "")
    problems = route(tree, env={}, tables=default_tables()).problems
    message = read.MSG_CONFIG_REQUIRED.format(key=key)
    assert problems == (RoutingProblem(read.CI_CONFIG, 1, 1, message, True),)


def test_config_keys_the_generator_ignores_are_reported_not_fatal() -> None:
    tree = files("steps: []\n")
    tree[read.CI_CONFIG] = CONFIG + "surprise: 1\ngithub_repo_name: vllm-project/vllm\n"
    problems = route(tree, env={}, tables=default_tables()).problems
    message = read.MSG_UNKNOWN_CONFIG_KEY.format(key="surprise")
    assert problems == (RoutingProblem(read.CI_CONFIG, 8, 11, message),)
    tree[read.CI_CONFIG] = "- no\n"
    assert route(tree, env={}, tables=default_tables()).steps == ()


def test_config_lists_of_the_wrong_shape_and_a_missing_job_dir_are_fatal() -> None:
    tree = files("steps: []\n")
    tree[read.CI_CONFIG] = CONFIG + "run_all_patterns: setup.py\n"
    [problem] = route(tree, env={}, tables=default_tables()).problems
    expected = read.MSG_CONFIG_FIELD.format(key="run_all_patterns", expected="a list of text")
    assert (problem.message, problem.line, problem.fatal) == (expected, 8, True)
    tree[read.CI_CONFIG] = CONFIG.replace("test_areas", "test_areas\n  - .buildkite/gone")
    [problem] = route(tree, env={}, tables=default_tables()).problems
    assert problem.message == read.MSG_JOB_DIR_MISSING.format(directory=".buildkite/gone")


def test_only_yaml_files_under_the_job_dirs_are_read() -> None:
    tree = files("steps: []\n")
    tree[".buildkite/test_areas/deep/more.yaml"] = "steps:\n  - label: deep\n"
    tree[".buildkite/test_areas/old.yml"] = "steps:\n  - label: yml\n"
    tree[".buildkite/elsewhere/x.yaml"] = "steps:\n  - label: elsewhere\n"
    labels = {step.label for step in route(tree, env={}, tables=default_tables()).steps}
    assert "deep" in labels
    assert not labels & {"yml", "elsewhere"}


def test_a_config_whose_repositories_are_not_text_gives_no_image() -> None:
    tree = files("steps:\n  - label: t\n")
    tree[read.CI_CONFIG] = CONFIG.replace("main: main-repo", "main: [x]")
    step = route(tree, env={"BUILDKITE_BRANCH": "main"}, tables=default_tables()).steps[0]
    assert (step.image_suffix, step.image) == ("", None)


def test_fields_of_every_kind_are_read() -> None:
    job = (
        "steps:\n  - label: t\n    commands: [a]\n    soft_fail: true\n"
        "    env: {A: b}\n    agent_tags: {x: y}\n    optional: false\n"
    )
    step = routes(job).steps[0]
    assert (step.soft_fail, step.optional) == (True, False)


def test_a_table_override_step_field_is_taken_as_is() -> None:
    tables = dataclasses.replace(
        default_tables(), step_fields=default_tables().step_fields | {"new_field"}
    )
    result = route(files("steps:\n  - label: t\n    new_field: [1]\n"), env={}, tables=tables)
    assert not [p for p in result.problems if "new_field" in p.message]


def test_the_job_dirs_of_a_config_and_of_one_that_cannot_be_read() -> None:
    assert job_dirs_of("job_dirs:\n  - .buildkite/test_areas\n") == (".buildkite/test_areas",)
    assert job_dirs_of("job_dirs: [\n") == ()
