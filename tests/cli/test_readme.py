"""The README must stay true to the code it documents."""

from __future__ import annotations

import re
from pathlib import Path

from bot.config.parse import parse_repo_config
from bot.service.settings import env_table_markdown

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_environment_table_is_the_settings_table() -> None:
    text = README.read_text()
    start = text.index("<!-- env-table:start -->\n") + len("<!-- env-table:start -->\n")
    end = text.index("<!-- env-table:end -->")
    assert text[start:end].strip() == env_table_markdown().strip()


def test_readme_quick_start_is_the_two_make_targets_ci_runs() -> None:
    text = README.read_text()
    quick = text[text.index("## Quick start") : text.index("## Commands")]
    commands = [
        line.split("#")[0].strip() for line in quick.splitlines() if line.startswith("make")
    ]
    assert commands == ["make demo", "make test"]
    ci = (README.parent / ".ci" / "run").read_text()
    assert "make test" in ci


def test_readme_config_example_is_valid() -> None:
    text = README.read_text()
    section = text[text.index("### The repository") :]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match is not None
    config = parse_repo_config(match.group(1))
    assert [pin.name for pin in config.pins] == ["flash-attention"]
    assert config.allowlist is not None
    assert config.landing is not None
    assert config.retry.max_failed_jobs == 8
