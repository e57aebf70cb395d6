"""What ``serve`` says at start-up, and that it will not serve nothing."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from bot.core.settings import Settings
from bot.service import startup
from sandbox.harness import app_key

SECRET = "s3cr3t-webhook"
TOKEN = "bkua_s3cr3t"


def settings(**overrides: object) -> Settings:
    base = Settings(
        webhook_secret=SECRET,
        app_id="1",
        private_key="-----BEGIN KEY-----",
        repositories=("vllm-project/vllm", "octo/repo"),
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


def test_the_summary_names_what_is_served_and_no_secret() -> None:
    line = startup.summary(
        settings(buildkite_api_token=TOKEN, buildkite_webhook_secret=SECRET, reconcile_interval=60)
    )
    assert line.startswith("serving vllm-project/vllm, octo/repo;")
    assert "Buildkite API https://api.buildkite.com/v2" in line
    assert "Buildkite webhooks on (signature)" in line
    assert "reconcile every 60 s" in line
    assert "retention 30 days" in line
    assert SECRET not in line
    assert TOKEN not in line


def test_the_summary_hides_the_database_password() -> None:
    url = "postgresql://bot:pg-s3cret@db:5432/followup_bot?sslmode=require"
    line = startup.summary(settings(database=url))
    assert "database postgresql://bot:***@db:5432/followup_bot?sslmode=require;" in line
    assert "pg-s3cret" not in line
    query = "postgresql://db/followup_bot?user=bot&password=pg-s3cret"
    assert "pg-s3cret" not in startup.summary(settings(database=query))


def test_the_summary_says_what_is_off() -> None:
    line = startup.summary(settings(reconcile_interval=0))
    assert f"Buildkite API {startup.OFF};" in line
    assert f"Buildkite webhooks {startup.OFF};" in line
    assert f"reconcile {startup.OFF};" in line


def test_no_repositories_is_refused() -> None:
    assert startup.refusal(settings(repositories=())) == startup.NO_REPOSITORIES
    assert startup.refusal(settings()) is None


def test_serve_without_repositories_refuses_to_start(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text(app_key()[0])
    env = {
        "PATH": "/usr/bin:/bin",
        "FOLLOWUP_BOT_WEBHOOK_SECRET": SECRET,
        "FOLLOWUP_BOT_APP_ID": "1",
        "FOLLOWUP_BOT_PRIVATE_KEY_FILE": str(key),
        "FOLLOWUP_BOT_DATABASE": str(tmp_path / "bot.sqlite3"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 2
    assert startup.NO_REPOSITORIES in result.stderr
    assert not (tmp_path / "bot.sqlite3").exists()  # nothing was started
