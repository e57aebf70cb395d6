"""The value checks the other config tests leave out, each with the problem it reports."""

from __future__ import annotations

import datetime

import pytest
from pydantic import ValidationError

from bot.config import messages as msg
from bot.config.errors import describe, message_for
from bot.config.models import RepoConfig
from bot.config.parse import parse_repo_config

from .samples import FILENAME, PIN_LINES, problems_of

BUILDKITE = "buildkite:\n  organization: vllm\n  pipelines: [ci]\n"
PINS = "pins:\n" + "\n".join(PIN_LINES) + "\n"


def rule(fields: str) -> str:
    return BUILDKITE + f"retry:\n  flaky_rules:\n    - {{{fields}}}\n"


BRANCH_EDGES = "it starts with '-', '/' or '.', or ends with '/', '.' or '.lock'"

CASES = {
    "empty branch": (
        PINS + '    branch: ""\n',
        "6:13: pins[0].branch",
        msg.MSG_BAD_BRANCH.format(value="", reason="it is empty"),
    ),
    "branch ending in '/'": (
        PINS + "    branch: release/\n",
        "6:13: pins[0].branch",
        msg.MSG_BAD_BRANCH.format(value="release/", reason=BRANCH_EDGES),
    ),
    "blank step glob": (
        rule("name: a, log: x, step: ' '"),
        "6:31: retry.flaky_rules[0].step",
        msg.MSG_EMPTY,
    ),
    "absolute label glob": (
        rule("name: a, log: x, label: /kernels"),
        "6:32: retry.flaky_rules[0].label",
        msg.MSG_ABSOLUTE_PATH.format(value="/kernels"),
    ),
    "empty rule name": (
        rule("name: '', log: x"),
        "6:14: retry.flaky_rules[0].name",
        msg.MSG_EMPTY,
    ),
    "empty regex": (
        rule("name: a, log: ''"),
        "6:22: retry.flaky_rules[0].log",
        msg.MSG_EMPTY,
    ),
    "count over the limit": (
        BUILDKITE + "retry:\n  max_failed_jobs: 1001\n",
        "5:20: retry.max_failed_jobs",
        msg.MSG_OUT_OF_RANGE.format(value=1001, low=0, high=1000),
    ),
    "blank label": (
        BUILDKITE + "retry:\n  author_label: ' '\n",
        "5:17: retry.author_label",
        msg.MSG_EMPTY,
    ),
    "blank check name": (
        "landing:\n  required_checks: [' ']\n",
        "2:21: landing.required_checks[0]",
        msg.MSG_EMPTY,
    ),
    "no megabytes": (
        BUILDKITE + "allowlist:\n  wheel_max_mb: 0\n",
        "5:17: allowlist.wheel_max_mb",
        msg.MSG_OUT_OF_RANGE.format(value=0, low=1, high=4096),
    ),
    "a date where text belongs": (
        "handle: 2025-01-02\n",
        "1:9: handle",
        msg.MSG_WRONG_TYPE.format(expected="a string", kind="date 2025-01-02") + msg.MSG_QUOTE_HINT,
    ),
}


@pytest.mark.parametrize(("text", "where", "message"), list(CASES.values()), ids=list(CASES))
def test_each_value_problem_is_located_and_explained(text: str, where: str, message: str) -> None:
    assert problems_of(text) == [f"{FILENAME}:{where}: {message}"]


def test_a_syntax_error_without_context_is_the_problem_alone() -> None:
    problem = msg.MSG_YAML_SYNTAX.format(problem="mapping values are not allowed here")

    assert problems_of("handle: a: b\n") == [f"{FILENAME}:1:10: {problem}"]


def test_a_bare_equals_sign_is_text() -> None:
    # YAML tags a lone "=" as !!value; the config reads it as the text it is.
    config = parse_repo_config(rule("name: equals, log: ="))

    assert [flaky.log for flaky in config.retry.flaky_rules] == ["="]


def test_describe_names_what_yaml_cannot_write_by_its_type() -> None:
    assert describe(datetime.date(2025, 1, 2)) == "date 2025-01-02"
    assert describe(b"bytes") == "bytes"


def test_an_unknown_key_under_a_field_holding_no_mapping_gets_no_suggestion() -> None:
    error = {"type": "extra_forbidden", "loc": ("handle", "hndle"), "msg": "", "input": 1}

    assert message_for(error) == msg.MSG_UNKNOWN_KEY.format(key="hndle")  # type: ignore[arg-type]


def test_a_config_that_is_no_mapping_is_left_to_the_schemas_type_error() -> None:
    with pytest.raises(ValidationError) as caught:
        RepoConfig.model_validate(("handle", "bot"))

    assert [error["type"] for error in caught.value.errors()] == ["model_type"]
