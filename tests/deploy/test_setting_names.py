"""Every FOLLOWUP_BOT_* name in deploy/ and the README is a setting the service reads."""

from __future__ import annotations

import re
from pathlib import Path

from tests.deploy.deploy_files import DEPLOY, README, ROOT, SETTING_NAMES

NAME = re.compile(r"\bFOLLOWUP_BOT_[A-Z0-9]+(?:_[A-Z0-9]+)*\b")
# Local, git-ignored secrets for compose (deploy/.gitignore): not the project's files.
LOCAL_ONLY = {".env", "secrets"}
# What the test run itself reads (the README's Quick start names them): not the service's.
TEST_RUN_NAMES = {
    "FOLLOWUP_BOT_REAL_DATA",
    "FOLLOWUP_BOT_TEST_POSTGRES",
    "FOLLOWUP_BOT_OCTOKIT_NODE_MODULES",
    "FOLLOWUP_BOT_PG_BINDIR",
    "FOLLOWUP_BOT_SCREENSHOTS",  # `make screenshots`: where the browser tests write PNGs
}


def _project_files() -> list[Path]:
    files = [README]
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file() and not LOCAL_ONLY & set(path.relative_to(DEPLOY).parts):
            files.append(path)
    return files


def test_the_name_pattern_finds_whole_names_only() -> None:
    text = "FOLLOWUP_BOT_APP_ID, ${FOLLOWUP_BOT_PORT:-8080} and the FOLLOWUP_BOT_* prefix"
    assert NAME.findall(text) == ["FOLLOWUP_BOT_APP_ID", "FOLLOWUP_BOT_PORT"]


def test_every_name_in_deploy_and_the_readme_is_a_setting() -> None:
    unknown = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in _project_files()
        for name in NAME.findall(path.read_text(encoding="utf-8"))
        if name not in SETTING_NAMES | TEST_RUN_NAMES
    }
    assert not unknown
