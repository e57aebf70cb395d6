"""``followup-bot serve``: its help lists the environment; every problem is reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.main import main
from bot.cli.serve import serve_settings
from bot.core.settings import ENV_VARS, MISSING, SETTINGS_ERROR_HEADER, env_help
from bot.service.startup import NO_REPOSITORIES

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\n"


def test_serve_help_lists_the_environment_it_reads(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert env_help() in out
    assert all(var.name in out for var in ENV_VARS)


def test_every_missing_setting_and_the_empty_repositories_together() -> None:
    settings, problems = serve_settings({"FOLLOWUP_BOT_PORT": "eighty"})
    assert settings is None
    assert problems[0] == SETTINGS_ERROR_HEADER
    assert MISSING.format(name="FOLLOWUP_BOT_WEBHOOK_SECRET") in problems
    assert MISSING.format(name="FOLLOWUP_BOT_APP_ID") in problems
    assert any(problem.startswith("FOLLOWUP_BOT_PORT:") for problem in problems)
    assert problems[-1] == NO_REPOSITORIES


def test_repositories_set_are_not_reported_with_the_other_problems() -> None:
    _, problems = serve_settings({"FOLLOWUP_BOT_REPOSITORIES": "vllm-project/vllm"})
    assert NO_REPOSITORIES not in problems


def test_only_the_empty_repositories_is_still_refused() -> None:
    env = {
        "FOLLOWUP_BOT_WEBHOOK_SECRET": "s",
        "FOLLOWUP_BOT_APP_ID": "1",
        "FOLLOWUP_BOT_PRIVATE_KEY": PEM,
    }
    assert serve_settings(env) == (None, [NO_REPOSITORIES])
    settings, problems = serve_settings({**env, "FOLLOWUP_BOT_REPOSITORIES": "o/r"})
    assert settings is not None
    assert problems == []


def test_migrate_creates_the_default_database_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("FOLLOWUP_BOT_DATABASE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert main(["migrate"]) == 0
    database = tmp_path / "state" / "followup-bot" / "followup-bot.sqlite3"
    assert database.is_file()
    assert str(database) in capsys.readouterr().out
