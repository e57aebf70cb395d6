from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bot.core.settings import (
    ENV_VARS,
    LOG_LEVELS,
    Settings,
    SettingsError,
    default_cache_dir,
    default_database,
    env_help,
    env_table_markdown,
)

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\n"
SECRET = "s3cret-value"


def minimal_env(**extra: str) -> dict[str, str]:
    env = {
        "FOLLOWUP_BOT_WEBHOOK_SECRET": SECRET,
        "FOLLOWUP_BOT_APP_ID": "12345",
        "FOLLOWUP_BOT_PRIVATE_KEY": PEM,
    }
    env.update(extra)
    return env


def problems_of(env: dict[str, str]) -> tuple[str, ...]:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env)
    return caught.value.problems


def test_defaults_with_only_the_required_variables() -> None:
    settings = Settings.from_env(minimal_env(HOME="/home/op"))
    assert settings == Settings(
        webhook_secret=SECRET,
        app_id="12345",
        private_key=PEM,
        repositories=(),
        database="/home/op/.local/state/followup-bot/followup-bot.sqlite3",
        cache_dir="/home/op/.cache/followup-bot/wheels",
    )
    assert settings.github_api_url == "https://api.github.com"
    assert (settings.host, settings.port, settings.workers) == ("127.0.0.1", 8080, 4)
    assert (settings.reconcile_interval, settings.max_attempts, settings.http_timeout) == (
        300.0,
        8,
        30.0,
    )
    assert settings.http_retry_backoff == 1.0
    assert (settings.bot_login, settings.log_level) == ("followup-bot[bot]", "INFO")


def test_every_variable_is_read() -> None:
    settings = Settings.from_env(
        minimal_env(
            FOLLOWUP_BOT_REPOSITORIES=" vllm-project/vllm, octo/repo.name_x ,vllm-project/vllm,",
            FOLLOWUP_BOT_GITHUB_API_URL="http://127.0.0.1:9000/api/v3/",
            FOLLOWUP_BOT_DATABASE="state/bot.db",
            FOLLOWUP_BOT_HOST="0.0.0.0",
            FOLLOWUP_BOT_PORT="0",
            FOLLOWUP_BOT_WORKERS="64",
            FOLLOWUP_BOT_RECONCILE_INTERVAL="0",
            FOLLOWUP_BOT_MAX_ATTEMPTS="3",
            FOLLOWUP_BOT_HTTP_TIMEOUT="2.5",
            FOLLOWUP_BOT_HTTP_RETRY_BACKOFF="0.05",
            FOLLOWUP_BOT_LOGIN="my-bot[bot]",
            FOLLOWUP_BOT_LOG_LEVEL="debug",
            FOLLOWUP_BOT_GITHUB_CONCURRENCY="100",
            FOLLOWUP_BOT_BUILDKITE_REQUESTS_PER_MINUTE="200",
        )
    )
    assert (settings.github_concurrency, settings.buildkite_requests_per_minute) == (100, 200)
    assert settings.repositories == ("vllm-project/vllm", "octo/repo.name_x")
    assert settings.github_api_url == "http://127.0.0.1:9000/api/v3"
    assert settings.database == "state/bot.db"
    assert (settings.host, settings.port, settings.workers) == ("0.0.0.0", 0, 64)
    assert (settings.reconcile_interval, settings.max_attempts, settings.http_timeout) == (
        0.0,
        3,
        2.5,
    )
    assert (settings.bot_login, settings.log_level) == ("my-bot[bot]", "DEBUG")
    assert settings.http_retry_backoff == 0.05


def test_the_default_database_and_cache_are_not_relative_to_the_working_directory() -> None:
    xdg = Settings.from_env(
        minimal_env(HOME="/home/op", XDG_STATE_HOME="/state", XDG_CACHE_HOME="/cache")
    )
    assert (xdg.database, xdg.cache_dir) == (
        "/state/followup-bot/followup-bot.sqlite3",
        "/cache/followup-bot/wheels",
    )
    # A relative XDG value is ignored, as the XDG spec says; without HOME, the user's home.
    relative = Settings.from_env(minimal_env(HOME="/home/op", XDG_STATE_HOME="state"))
    assert relative.database == "/home/op/.local/state/followup-bot/followup-bot.sqlite3"
    assert Path(Settings.from_env(minimal_env()).database).is_absolute()
    assert default_database({"HOME": "/h"}) == "/h/.local/state/followup-bot/followup-bot.sqlite3"
    assert default_cache_dir({"HOME": "/h"}) == "/h/.cache/followup-bot/wheels"


def test_serve_help_lists_every_variable_with_its_default() -> None:
    text = env_help()
    for var in ENV_VARS:
        assert var.name in text
    assert (
        "FOLLOWUP_BOT_DATABASE  (default: $XDG_STATE_HOME/followup-bot/followup-bot.sqlite3)"
        in (text)
    )
    assert "FOLLOWUP_BOT_APP_ID  (no default)" in text
    assert all(len(line) <= 100 for line in text.splitlines() if line.startswith("      "))


def test_empty_optional_values_mean_default() -> None:
    settings = Settings.from_env(minimal_env(FOLLOWUP_BOT_PORT="", FOLLOWUP_BOT_WORKERS="  "))
    assert (settings.port, settings.workers) == (8080, 4)


def test_nothing_set_lists_every_required_variable() -> None:
    problems = problems_of({})
    assert problems == (
        "FOLLOWUP_BOT_WEBHOOK_SECRET: required but not set",
        "FOLLOWUP_BOT_APP_ID: required but not set",
        "FOLLOWUP_BOT_PRIVATE_KEY or FOLLOWUP_BOT_PRIVATE_KEY_FILE: required but not set",
    )


def test_message_has_one_problem_per_line() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"FOLLOWUP_BOT_WEBHOOK_SECRET": "", "FOLLOWUP_BOT_PORT": "x"})
    lines = str(caught.value).splitlines()
    assert lines[0] == "invalid followup-bot configuration:"
    assert lines[1:] == list(caught.value.problems)
    assert "FOLLOWUP_BOT_WEBHOOK_SECRET: must not be empty" in lines
    assert "FOLLOWUP_BOT_PORT: 'x' is not an integer" in lines


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("FOLLOWUP_BOT_PORT", "http", "FOLLOWUP_BOT_PORT: 'http' is not an integer"),
        ("FOLLOWUP_BOT_PORT", "65536", "FOLLOWUP_BOT_PORT: 65536 is outside 0..65535"),
        ("FOLLOWUP_BOT_WORKERS", "0", "FOLLOWUP_BOT_WORKERS: 0 is outside 1..64"),
        ("FOLLOWUP_BOT_WORKERS", "65", "FOLLOWUP_BOT_WORKERS: 65 is outside 1..64"),
        (
            "FOLLOWUP_BOT_GITHUB_CONCURRENCY",
            "101",
            "FOLLOWUP_BOT_GITHUB_CONCURRENCY: 101 is outside 1..100",
        ),
        (
            "FOLLOWUP_BOT_BUILDKITE_REQUESTS_PER_MINUTE",
            "0",
            "FOLLOWUP_BOT_BUILDKITE_REQUESTS_PER_MINUTE: 0 is outside 1..10000",
        ),
        ("FOLLOWUP_BOT_MAX_ATTEMPTS", "0", "FOLLOWUP_BOT_MAX_ATTEMPTS: 0 is outside 1..100"),
        (
            "FOLLOWUP_BOT_RECONCILE_INTERVAL",
            "-1",
            "FOLLOWUP_BOT_RECONCILE_INTERVAL: -1.0 is outside 0.0..604800.0",
        ),
        (
            "FOLLOWUP_BOT_RECONCILE_INTERVAL",
            "soon",
            "FOLLOWUP_BOT_RECONCILE_INTERVAL: 'soon' is not a number",
        ),
        (
            "FOLLOWUP_BOT_HTTP_TIMEOUT",
            "0",
            "FOLLOWUP_BOT_HTTP_TIMEOUT: 0.0 is outside 0.001..3600.0",
        ),
        (
            "FOLLOWUP_BOT_HTTP_TIMEOUT",
            "nan",
            "FOLLOWUP_BOT_HTTP_TIMEOUT: nan is outside 0.001..3600.0",
        ),
        (
            "FOLLOWUP_BOT_GITHUB_API_URL",
            "ftp://example",
            "FOLLOWUP_BOT_GITHUB_API_URL: 'ftp://example' is not an http(s) URL",
        ),
        (
            "FOLLOWUP_BOT_GITHUB_API_URL",
            "https://",
            "FOLLOWUP_BOT_GITHUB_API_URL: 'https://' is not an http(s) URL",
        ),
        (
            "FOLLOWUP_BOT_REPOSITORIES",
            "vllm-project/vllm,just-a-name",
            "FOLLOWUP_BOT_REPOSITORIES: 'just-a-name' is not owner/name",
        ),
        (
            "FOLLOWUP_BOT_REPOSITORIES",
            "-bad/owner",
            "FOLLOWUP_BOT_REPOSITORIES: '-bad/owner' is not owner/name",
        ),
        (
            "FOLLOWUP_BOT_REPOSITORIES",
            "a/b/c",
            "FOLLOWUP_BOT_REPOSITORIES: 'a/b/c' is not owner/name",
        ),
        (
            "FOLLOWUP_BOT_LOG_LEVEL",
            "loud",
            "FOLLOWUP_BOT_LOG_LEVEL: 'loud' is not one of " + ", ".join(LOG_LEVELS),
        ),
        (
            "FOLLOWUP_BOT_PRIVATE_KEY",
            "not a key",
            "FOLLOWUP_BOT_PRIVATE_KEY: does not look like a PEM private key",
        ),
        (
            "FOLLOWUP_BOT_PRIVATE_KEY",
            "-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----",
            "FOLLOWUP_BOT_PRIVATE_KEY: does not look like a PEM private key",
        ),
    ],
)
def test_invalid_values_are_named(variable: str, value: str, problem: str) -> None:
    assert problems_of(minimal_env(**{variable: value})) == (problem,)


def test_all_problems_are_reported_together() -> None:
    env = minimal_env(FOLLOWUP_BOT_PORT="x", FOLLOWUP_BOT_WORKERS="0", FOLLOWUP_BOT_LOG_LEVEL="?")
    del env["FOLLOWUP_BOT_APP_ID"]
    assert [problem.split(":")[0] for problem in problems_of(env)] == [
        "FOLLOWUP_BOT_APP_ID",
        "FOLLOWUP_BOT_PORT",
        "FOLLOWUP_BOT_WORKERS",
        "FOLLOWUP_BOT_LOG_LEVEL",
    ]


def test_private_key_from_file_is_read_once(tmp_path: Path) -> None:
    key_file = tmp_path / "app.pem"
    key_file.write_text(PEM)
    env = minimal_env(FOLLOWUP_BOT_PRIVATE_KEY_FILE=str(key_file))
    del env["FOLLOWUP_BOT_PRIVATE_KEY"]
    settings = Settings.from_env(env)
    key_file.unlink()  # the settings hold the text, not the path
    assert settings.private_key == PEM


def test_private_key_file_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    env = minimal_env(FOLLOWUP_BOT_PRIVATE_KEY_FILE=str(missing))
    del env["FOLLOWUP_BOT_PRIVATE_KEY"]
    assert problems_of(env) == (
        f"FOLLOWUP_BOT_PRIVATE_KEY_FILE: cannot read {str(missing)!r}: No such file or directory",
    )


def test_private_key_file_not_pem(tmp_path: Path) -> None:
    key_file = tmp_path / "app.pem"
    key_file.write_text("hello")
    env = minimal_env(FOLLOWUP_BOT_PRIVATE_KEY_FILE=str(key_file))
    del env["FOLLOWUP_BOT_PRIVATE_KEY"]
    assert problems_of(env) == (
        "FOLLOWUP_BOT_PRIVATE_KEY_FILE: does not look like a PEM private key",
    )


def test_both_private_key_sources_is_an_error(tmp_path: Path) -> None:
    env = minimal_env(FOLLOWUP_BOT_PRIVATE_KEY_FILE=str(tmp_path / "k.pem"))
    assert problems_of(env) == (
        "FOLLOWUP_BOT_PRIVATE_KEY: set either FOLLOWUP_BOT_PRIVATE_KEY"
        " or FOLLOWUP_BOT_PRIVATE_KEY_FILE, not both",
    )


def test_escaped_newlines_in_inline_key_are_restored() -> None:
    escaped = PEM.replace("\n", "\\n")
    settings = Settings.from_env(minimal_env(FOLLOWUP_BOT_PRIVATE_KEY=escaped))
    assert settings.private_key == PEM


def test_secrets_are_not_in_repr() -> None:
    settings = Settings.from_env(minimal_env())
    text = repr(settings) + str(settings)
    assert SECRET not in text
    assert "MIIEabc" not in text
    assert "12345" in text  # repr still shows the harmless fields


def test_every_field_has_an_env_var() -> None:
    fields = {field.name for field in dataclasses.fields(Settings)}
    documented = {var.field for var in ENV_VARS}
    assert documented == fields
    assert len({var.name for var in ENV_VARS}) == len(ENV_VARS)
    assert all(var.name.startswith("FOLLOWUP_BOT_") and var.description for var in ENV_VARS)


def test_env_var_defaults_match_the_dataclass() -> None:
    # A default in the table that differs from the code would mislead operators.
    folders = {"XDG_STATE_HOME": "/state", "XDG_CACHE_HOME": "/cache"}
    settings = Settings.from_env(minimal_env(**folders))
    for var in ENV_VARS:
        if var.default is None:
            continue
        value = var.default
        for name, folder in folders.items():
            value = value.replace(f"${name}", folder)
        expected = (
            Settings.from_env(minimal_env(**folders, **{var.name: value})) if value else settings
        )
        assert getattr(expected, var.field) == getattr(settings, var.field), var.name


def test_markdown_table_lists_every_variable() -> None:
    table = env_table_markdown().splitlines()
    assert table[0] == "| variable | default | description |"
    assert len(table) == 2 + len(ENV_VARS)
    assert (
        "| `FOLLOWUP_BOT_WORKERS` | `4` |"
        in table[2 + [v.name for v in ENV_VARS].index("FOLLOWUP_BOT_WORKERS")]
    )
