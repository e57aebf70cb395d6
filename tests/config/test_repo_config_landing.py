"""The landing keys added for approval by code owners and the post-landing cooldown."""

from __future__ import annotations

from bot.config import messages as msg
from bot.config.models import LandingConfig
from bot.config.parse import parse_repo_config
from bot.config.types import MAX_COOLDOWN_MINUTES
from tests.config.samples import FILENAME, problems_of


def test_defaults() -> None:
    config = parse_repo_config("landing: {}\n")
    assert config.landing == LandingConfig()
    assert config.landing.codeowners is False
    assert config.landing.cooldown_minutes == 10


def test_values_are_read() -> None:
    config = parse_repo_config("landing: {codeowners: true, cooldown_minutes: 0}\n")
    assert config.landing is not None
    assert (config.landing.codeowners, config.landing.cooldown_minutes) == (True, 0)


def test_required_check_names_are_free_text_globs() -> None:
    config = parse_repo_config("landing:\n  required_checks: ['build / test (3.12)', 'docs*']\n")
    assert config.landing is not None
    assert config.landing.required_checks == ("build / test (3.12)", "docs*")


def test_cooldown_out_of_range() -> None:
    message = msg.MSG_OUT_OF_RANGE.format(value=10081, low=0, high=MAX_COOLDOWN_MINUTES)
    assert problems_of("landing: {cooldown_minutes: 10081}\n") == [
        f"{FILENAME}:1:29: landing.cooldown_minutes: {message}"
    ]


def test_codeowners_must_be_a_boolean() -> None:
    [problem] = problems_of('landing: {codeowners: "yes"}\n')
    assert problem.startswith(f"{FILENAME}:1:23: landing.codeowners: ")
