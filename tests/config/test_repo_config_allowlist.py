from __future__ import annotations

import pytest

from bot.config.errors import ConfigError
from bot.config.parse import parse_repo_config

SECTION = "allowlist:\n  line_length: {ll}\n  wheel_url: {url}\n"
URL = '"https://wheels.example.org/{commit}/vllm.whl"'


def test_allowlist_audit_settings_parse_with_defaults() -> None:
    config = parse_repo_config("allowlist: {}\n" + BUILDKITE)
    assert config.allowlist is not None
    assert config.allowlist.line_length == 88
    assert config.allowlist.wheel_url is None
    assert config.allowlist.wheel_max_mb == 600
    full = parse_repo_config(SECTION.format(ll=100, url=URL) + "  wheel_max_mb: 400\n")
    assert full.allowlist is not None
    assert full.allowlist.wheel_url == "https://wheels.example.org/{commit}/vllm.whl"
    assert (full.allowlist.line_length, full.allowlist.wheel_max_mb) == (100, 400)


@pytest.mark.parametrize(
    ("ll", "url", "problem"),
    [
        (10, URL, "2:16: allowlist.line_length: 10 is outside 40..400"),
        ('"88"', URL, "2:16: allowlist.line_length: expected an integer, got"),
        (88, '"ftp://x/{commit}"', "3:14: allowlist.wheel_url: expected an http(s) URL"),
        (88, '"https://x/y.whl"', "3:14: allowlist.wheel_url: the URL template must contain"),
    ],
)
def test_allowlist_audit_settings_problems(ll: object, url: str, problem: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_repo_config(SECTION.format(ll=ll, url=url))
    assert problem in str(error.value)


def test_paused_must_be_a_boolean() -> None:
    text = (
        "pins:\n  - name: fa\n    upstream: o/r\n    file: a.cmake\n"
        "    dependency: fa\n    paused: 1\n"
    )
    with pytest.raises(ConfigError) as error:
        parse_repo_config(text)
    assert "pins[0].paused: expected true or false, got" in str(error.value)


BUILDKITE = "buildkite: {organization: vllm, pipelines: [ci]}\n"
RETRY = (
    """\
retry:
  max_failed_jobs: 5
  author_label: ci-ready
  flaky_rules:
    - name: spec-decode-race
      step: spec-decode*
      log: "test_spec_decode_e2e.*Timeout"
  infra_patterns:
    - {name: s3-throttle, log: "SlowDown: Please reduce your request rate"}
"""
    + BUILDKITE
)


def test_retry_section_parses_and_defaults() -> None:
    assert parse_repo_config("handle: bot\n").retry.max_failed_jobs == 8
    retry = parse_repo_config(RETRY).retry
    assert (retry.max_failed_jobs, retry.max_retries_per_step) == (5, 2)
    assert retry.author_label == "ci-ready"
    [rule] = retry.flaky_rules
    assert (rule.name, rule.step, rule.label) == ("spec-decode-race", "spec-decode*", "*")
    assert retry.infra_patterns[0].name == "s3-throttle"


def test_retry_rule_with_a_broken_regex_is_reported_where_it_is() -> None:
    with pytest.raises(ConfigError) as error:
        parse_repo_config(RETRY.replace('"test_spec_decode_e2e.*Timeout"', '"(("'))
    assert "7:12: retry.flaky_rules[0].log: invalid regular expression '(('" in str(error.value)
