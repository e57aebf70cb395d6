"""The `main_red` and `images` sections, and the problems across sections they add."""

from __future__ import annotations

import pytest

from bot.config import messages as msg
from bot.config.main_red import (
    DEFAULT_LANES,
    DEFAULT_MAIN_HISTORY_BUILDS,
    DEFAULT_WATCHED_STEPS,
    MSG_BAD_ENV_NAME,
    MSG_DUPLICATE_LANE,
    MSG_LANE_NO_ENV,
    MSG_LANE_RESERVED,
    ImagesConfig,
    LaneConfig,
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


# --- main_red.lanes -------------------------------------------------------------------

NIGHTLY = LaneConfig(name="torch-nightly", env={"TORCH_NIGHTLY": "1"})


def test_by_default_torch_nightly_is_judged_apart() -> None:
    config = parsed(BUILDKITE + "main_red: {}\n")
    assert config is not None
    assert config.lanes == ()
    assert DEFAULT_LANES == (NIGHTLY,)
    assert config.judged_lanes() == (NIGHTLY,)


def test_configured_lanes_come_before_the_defaults_they_do_not_rename() -> None:
    text = BUILDKITE + (
        "main_red:\n"
        "  lanes:\n"
        "    - {name: cuda13, env: {CUDA_VERSION: '13.0', BUILD_IMAGE: cuda13}}\n"
    )
    config = parsed(text)
    assert config is not None
    cuda13 = LaneConfig(name="cuda13", env={"CUDA_VERSION": "13.0", "BUILD_IMAGE": "cuda13"})
    assert config.lanes == (cuda13,)
    assert config.judged_lanes() == (cuda13, NIGHTLY)
    renamed = parsed(BUILDKITE + "main_red: {lanes: [{name: torch-nightly, env: {TN: '1'}}]}\n")
    assert renamed is not None
    assert renamed.judged_lanes() == (LaneConfig(name="torch-nightly", env={"TN": "1"}),)


def test_a_config_with_lanes_is_hashable() -> None:
    config = parse_repo_config(BUILDKITE + "main_red: {lanes: [{name: a, env: {A: '1'}}]}\n")
    assert hash(config) == hash(
        parse_repo_config(BUILDKITE + "main_red: {lanes: [{name: a, env: {A: '1'}}]}\n")
    )


@pytest.mark.parametrize(
    ("lanes", "where", "message"),
    [
        ("[{name: regular, env: {A: '1'}}]", "3:18: main_red.lanes[0].name", MSG_LANE_RESERVED),
        ("[{name: x, env: {}}]", "3:26: main_red.lanes[0].env", MSG_LANE_NO_ENV),
        (
            "[{name: x, env: {1A: '1'}}]",
            "3:31: main_red.lanes[0].env.1A.[key]",
            MSG_BAD_ENV_NAME.format(value="1A"),
        ),
        (
            "[{name: x, env: {A: '1'}}, {name: x, env: {B: '1'}}]",
            "3:10: main_red.lanes",
            MSG_DUPLICATE_LANE.format(name="x"),
        ),
        ("[{name: x}]", "3:11: main_red.lanes[0].env", msg.MSG_MISSING),
    ],
)
def test_a_lane_needs_its_own_name_and_some_env(lanes: str, where: str, message: str) -> None:
    assert problems_of(BUILDKITE + f"main_red:\n  lanes: {lanes}\n") == [
        f"{FILENAME}:{where}: {message}"
    ]


def test_lane_env_values_are_text() -> None:
    [problem] = problems_of(BUILDKITE + "main_red:\n  lanes: [{name: x, env: {A: 1}}]\n")
    assert problem.startswith(f"{FILENAME}:3:30: main_red.lanes[0].env.A: expected a string")


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
