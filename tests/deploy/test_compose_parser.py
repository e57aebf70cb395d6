"""deploy/compose.yaml through a real Compose implementation's parser (podman-compose).

podman-compose (a dev dependency) reads, interpolates and prints the file; it needs the
podman command on PATH to start at all, so without it these are skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

import pytest
import yaml

from tests.deploy.deploy_files import COMPOSE, ROOT

REQUIRED = {
    "FOLLOWUP_BOT_WEBHOOK_SECRET": "webhook-secret",
    "FOLLOWUP_BOT_APP_ID": "123",
    "FOLLOWUP_BOT_REPOSITORIES": "octo/repo",
    "FOLLOWUP_BOT_STATUS_TOKEN": "status-token",
    "POSTGRES_PASSWORD": "password1",
}


def _config(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("podman_compose")
    if shutil.which("podman") is None:
        pytest.skip("podman-compose needs the podman command")
    clean = {key: value for key, value in os.environ.items() if key not in REQUIRED}
    return subprocess.run(
        [sys.executable, "-m", "podman_compose", "-f", str(COMPOSE), "config"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compose_accepts_the_file_and_fills_in_the_settings() -> None:
    done = _config(REQUIRED)
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = yaml.safe_load(done.stdout)
    bot = config["services"]["bot"]["environment"]
    assert bot["FOLLOWUP_BOT_STATUS_TOKEN"] == "status-token"
    assert bot["FOLLOWUP_BOT_DATABASE"].startswith("postgresql://followup_bot:password1@db:")


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_compose_refuses_to_start_without_a_required_setting(missing: str) -> None:
    done = _config({key: value for key, value in REQUIRED.items() if key != missing})
    assert done.returncode != 0
    assert f"set {missing}" in done.stderr
