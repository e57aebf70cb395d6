"""The `main_red` and `images` sections, and the problems across sections they add."""

from __future__ import annotations

import pytest

from bot.config import messages as msg
from bot.config.main_red import (
    DEFAULT_MAIN_HISTORY_BUILDS,
    DEFAULT_WATCHED_STEPS,
    ImagesConfig,
    MainRedConfig,
)
from bot.config.parse import parse_repo_config
from bot.config.types import MAX_SMALL_COUNT

from .samples import FILENAME, problems_of

BUILDKITE = "buildkite: {organization: vllm, pipelines: [ci, ci-nightly]}\n"


def at(line: int, column: int, field: str, message: str) -> str:
    return f"{FILENAME}:{line}:{column}: {field}: {message}"


def parsed(text: str) -> MainRedConfig | None:
    return parse_repo_config(text, filename=FILENAME).main_red


# --- main_red -------------------------------------------------------------------------


def test_left_out_main_red_is_off_and_images_have_defaults() -> None:
    config = parse_repo_config(BUILDKITE, filename=FILENAME)
    assert config.main_red is None
    assert config.images == ImagesConfig(registry_url=None, nightly=True)


def test_an_empty_main_red_watches_every_step_of_every_pipeline() -> None:
    assert parsed(BUILDKITE + "main_red: {}\n") == MainRedConfig(
        pipelines=(),
        steps=DEFAULT_WATCHED_STEPS,
        history_builds=DEFAULT_MAIN_HISTORY_BUILDS,
        revert=True,
        labels=(),
    )
    assert DEFAULT_WATCHED_STEPS == ("*",)
    assert DEFAULT_MAIN_HISTORY_BUILDS == 30


def test_every_main_red_key_is_read() -> None:
    text = BUILDKITE + (
        "main_red:\n"
        "  pipelines: [ci-nightly]\n"
        "  steps: ['kernels-*', torch-stable-abi-audit]\n"
        "  history_builds: 12\n"
        "  revert: false\n"
        "  labels: [ci-red, 'needs triage']\n"
    )
    assert parsed(text) == MainRedConfig(
        pipelines=("ci-nightly",),
        steps=("kernels-*", "torch-stable-abi-audit"),
        history_builds=12,
        revert=False,
        labels=("ci-red", "needs triage"),
    )


def test_main_red_without_buildkite_is_refused() -> None:
    assert problems_of("main_red: {revert: false}\n") == [
        at(1, 1, "main_red", msg.MSG_MAIN_RED_NEEDS_BUILDKITE)
    ]


def test_main_red_and_retry_without_buildkite_are_both_refused() -> None:
    assert problems_of("retry: {max_failed_jobs: 3}\nmain_red: {}\n") == [
        at(1, 1, "retry", msg.MSG_RETRY_NEEDS_BUILDKITE),
        at(2, 1, "main_red", msg.MSG_MAIN_RED_NEEDS_BUILDKITE),
    ]


def test_a_watched_pipeline_not_in_buildkite_is_refused() -> None:
    text = BUILDKITE + "main_red:\n  pipelines: [ci, nightly, ci-full]\n"
    assert problems_of(text) == [
        at(
            3,
            19,
            "main_red.pipelines[1]",
            msg.MSG_MAIN_RED_UNKNOWN_PIPELINE.format(pipeline="nightly"),
        ),
        at(
            3,
            28,
            "main_red.pipelines[2]",
            msg.MSG_MAIN_RED_UNKNOWN_PIPELINE.format(pipeline="ci-full"),
        ),
    ]
    assert msg.MSG_MAIN_RED_UNKNOWN_PIPELINE.format(pipeline="nightly") == (
        "'nightly' is not in buildkite.pipelines"
    )


def test_buildkite_without_main_red_has_no_pipeline_problem() -> None:
    assert parse_repo_config(BUILDKITE, filename=FILENAME).buildkite is not None


@pytest.mark.parametrize(
    ("value", "column", "message"),
    [
        (
            str(MAX_SMALL_COUNT + 1),
            28,
            msg.MSG_OUT_OF_RANGE.format(value=MAX_SMALL_COUNT + 1, low=0, high=MAX_SMALL_COUNT),
        ),
        ("-1", 28, msg.MSG_OUT_OF_RANGE.format(value=-1, low=0, high=MAX_SMALL_COUNT)),
    ],
)
def test_history_builds_is_a_small_count(value: str, column: int, message: str) -> None:
    text = BUILDKITE + f"main_red: {{history_builds: {value}}}\n"
    assert problems_of(text) == [at(2, column, "main_red.history_builds", message)]


def test_an_unknown_main_red_key_is_refused() -> None:
    problems = problems_of(BUILDKITE + "main_red: {reverts: false}\n")
    assert len(problems) == 1
    assert problems[0].startswith(
        at(2, 12, "main_red.reverts", msg.MSG_UNKNOWN_KEY.format(key="reverts"))
    )


# --- images ---------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["https://registry.example", "http://127.0.0.1:5000/v2"])
def test_images_registry_url_and_nightly_are_read(url: str) -> None:
    config = parse_repo_config(f"images: {{registry_url: '{url}', nightly: false}}\n")
    assert config.images == ImagesConfig(registry_url=url, nightly=False)
    assert config.main_red is None


@pytest.mark.parametrize(
    "url", ["ftp://registry.example", "registry.example", "https://", "public.ecr.aws/q9t5s3a7"]
)
def test_images_registry_url_must_be_an_http_url(url: str) -> None:
    assert problems_of(f"images: {{registry_url: '{url}'}}\n") == [
        at(1, 24, "images.registry_url", msg.MSG_BAD_URL.format(value=url))
    ]
