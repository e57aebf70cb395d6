"""The landing keys of the full CI: starting the full build, how long to wait for one."""

from __future__ import annotations

from bot.config import messages as msg
from bot.config.models import DEFAULT_FULL_BUILD_MINUTES, LandingConfig
from bot.config.parse import parse_repo_config
from bot.config.types import MAX_COOLDOWN_MINUTES
from tests.config.samples import FILENAME, problems_of


def test_defaults_wait_for_the_pipeline_for_half_an_hour() -> None:
    config = parse_repo_config("landing: {}\n")
    assert config.landing == LandingConfig()
    assert config.landing.start_full_build is False
    assert config.landing.full_build_minutes == DEFAULT_FULL_BUILD_MINUTES == 30


def test_values_are_read() -> None:
    config = parse_repo_config("landing: {start_full_build: true, full_build_minutes: 90}\n")
    assert config.landing is not None
    assert (config.landing.start_full_build, config.landing.full_build_minutes) == (True, 90)


def test_minutes_out_of_range() -> None:
    message = msg.MSG_OUT_OF_RANGE.format(value=-1, low=0, high=MAX_COOLDOWN_MINUTES)
    assert problems_of("landing: {full_build_minutes: -1}\n") == [
        f"{FILENAME}:1:31: landing.full_build_minutes: {message}"
    ]


def test_start_full_build_must_be_a_boolean() -> None:
    [problem] = problems_of('landing: {start_full_build: "yes"}\n')
    assert problem.startswith(f"{FILENAME}:1:29: landing.start_full_build: ")
