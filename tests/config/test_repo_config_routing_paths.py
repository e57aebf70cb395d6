"""`routing.paths`: extra globs only (the config's job directories are read from it)."""

from __future__ import annotations

from bot.config.parse import parse_repo_config

from .samples import FILENAME, problems_of


def test_by_default_there_are_no_extra_paths() -> None:
    config = parse_repo_config("routing:\n  required_keys: [audit]\n", filename=FILENAME)
    assert config.routing is not None
    assert config.routing.paths == ()


def test_extra_paths_are_path_globs() -> None:
    text = "routing:\n  paths: ['.buildkite/scripts/**']\n"
    config = parse_repo_config(text, filename=FILENAME)
    assert config.routing is not None
    assert config.routing.paths == (".buildkite/scripts/**",)
    [problem] = problems_of(text.replace(".buildkite/scripts/**", "./.buildkite/**"))
    assert problem.startswith(f"{FILENAME}:2:11: routing.paths[0]: must not contain a '.' name")
