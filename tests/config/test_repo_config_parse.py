"""Valid configs become the expected frozen models."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config.errors import ConfigError, ConfigProblem
from bot.config.models import (
    AllowlistConfig,
    BuildkiteConfig,
    LandingConfig,
    PinConfig,
    RepoConfig,
)
from bot.config.parse import CONFIG_PATH, parse_repo_config, parse_repo_config_bytes

from .samples import PIN_LINES

DESIGN_SKETCH = """\
handle: bot                      # comments address "@bot <command>"
pins:
  - name: flash-attention
    upstream: vllm-project/flash-attention
    branch: main
    file: cmake/external_projects/vllm_flash_attn.cmake
    dependency: vllm-flash-attn  # the FetchContent_Declare name
    owns: ["vllm_flash_attn/*"]  # allowlist entries this upstream provides
allowlist:
  file: .buildkite/check-torch-abi.py
  variable: ALLOWED_UNSTABLE_LIBRARIES
  audit_step: torch-stable-abi-audit
buildkite: {organization: vllm, pipelines: [ci]}
landing: {labels_on_approval: [ready], merge_method: squash, paths: ["cmake/**", ".buildkite/check-torch-abi.py"]}
"""  # noqa: E501 (kept exactly as DESIGN.md writes it)

FLASH_ATTENTION = PinConfig(
    name="flash-attention",
    upstream="vllm-project/flash-attention",
    branch="main",
    file="cmake/external_projects/vllm_flash_attn.cmake",
    dependency="vllm-flash-attn",
    owns=("vllm_flash_attn/*",),
)


def test_design_sketch_parses_into_the_expected_models() -> None:
    assert parse_repo_config(DESIGN_SKETCH) == RepoConfig(
        handle="bot",
        pins=(FLASH_ATTENTION,),
        allowlist=AllowlistConfig(
            file=".buildkite/check-torch-abi.py",
            variable="ALLOWED_UNSTABLE_LIBRARIES",
            audit_step="torch-stable-abi-audit",
        ),
        buildkite=BuildkiteConfig(organization="vllm", pipelines=("ci",)),
        landing=LandingConfig(
            labels_on_approval=("ready",),
            merge_method="squash",
            paths=("cmake/**", ".buildkite/check-torch-abi.py"),
        ),
    )


def test_result_is_frozen() -> None:
    config = parse_repo_config(DESIGN_SKETCH)
    with pytest.raises(ValidationError, match="frozen"):
        config.handle = "other"
    with pytest.raises(ValidationError, match="frozen"):
        config.pins[0].paused = True
    # Frozen all the way down, so equal configs hash alike (usable as keys).
    assert hash(config) == hash(parse_repo_config(DESIGN_SKETCH))


def test_omitted_keys_take_their_defaults_and_sections_stay_off() -> None:
    config = parse_repo_config("pins:\n" + "\n".join(PIN_LINES))
    assert config == RepoConfig(
        pins=(
            PinConfig(
                name="fa",
                upstream="vllm-project/flash-attention",
                file="cmake/fa.cmake",
                dependency="vllm-flash-attn",
            ),
        )
    )
    assert config.handle == "bot"
    assert config.pins[0].branch == "main"
    assert config.pins[0].owns == ()
    assert (config.allowlist, config.buildkite, config.landing) == (None, None, None)


def test_empty_sections_switch_features_on_with_defaults() -> None:
    config = parse_repo_config(
        "allowlist: {}\nlanding: {}\nbuildkite: {organization: vllm, pipelines: [ci]}\n"
    )
    assert config.allowlist == AllowlistConfig()
    assert config.allowlist.variable == "ALLOWED_UNSTABLE_LIBRARIES"
    assert config.landing == LandingConfig()
    assert config.landing.paths == ("cmake/**", ".buildkite/check-torch-abi.py")


def test_a_section_with_nothing_under_it_is_the_same_as_leaving_it_out() -> None:
    config = parse_repo_config("handle: helper\npins:\nallowlist:\nbuildkite:\nlanding:\n")
    assert config == RepoConfig(handle="helper")


def test_quoted_scalars_stay_text() -> None:
    text = "pins:\n" + "\n".join(
        [
            '  - name: "2024"',
            "    upstream: a/b",
            "    branch: 'yes'",
            "    file: f.cmake",
            "    dependency: '1.0'",
        ]
    )
    pin = parse_repo_config(text).pins[0]
    assert (pin.name, pin.branch, pin.dependency) == ("2024", "yes", "1.0")


def test_bytes_with_a_byte_order_mark_parse() -> None:
    config = parse_repo_config_bytes("\ufeffhandle: bot2\n".encode())
    assert config.handle == "bot2"


def test_anchors_and_aliases_are_allowed() -> None:
    text = (
        "landing: {paths: &paths [cmake/**]}\n"
        "pins:\n" + "\n".join(PIN_LINES) + "\n    owns: *paths\n"
    )
    config = parse_repo_config(text)
    assert config.pins[0].owns == ("cmake/**",)


def _pin(name: str, upstream: str, branch: str = "main") -> PinConfig:
    return PinConfig(name=name, upstream=upstream, branch=branch, file="f", dependency=name)


def test_pin_lookup_by_name() -> None:
    config = RepoConfig(pins=(_pin("a", "o/a"), _pin("b", "o/b")))
    assert config.pin("b") == _pin("b", "o/b")
    assert config.pin("c") is None


def test_pins_following_matches_owner_repo_case_insensitively_and_branch_exactly() -> None:
    one = _pin("one", "vllm-project/flash-attention")
    two = _pin("two", "VLLM-Project/Flash-Attention")
    other_branch = _pin("three", "vllm-project/flash-attention", branch="release")
    other_repo = _pin("four", "vllm-project/FlashMLA")
    config = RepoConfig(pins=(one, two, other_branch, other_repo))
    assert config.pins_following("Vllm-Project/flash-attention", "main") == (one, two)
    assert config.pins_following("vllm-project/flash-attention", "release") == (other_branch,)
    assert config.pins_following("vllm-project/flash-attention", "Main") == ()
    assert config.pins_following("someone/else", "main") == ()


@pytest.mark.parametrize(
    ("problem", "text"),
    [
        (ConfigProblem("f.yml", 3, 7, "pins[0].name", "bad"), "f.yml:3:7: pins[0].name: bad"),
        (ConfigProblem("f.yml", 3, None, "handle", "bad"), "f.yml:3: handle: bad"),
        (ConfigProblem("f.yml", 1, 1, "", "empty config"), "f.yml:1:1: empty config"),
        (ConfigProblem("f.yml", None, None, "", "too big"), "f.yml: too big"),
    ],
)
def test_problem_text_names_file_line_column_and_field(problem: ConfigProblem, text: str) -> None:
    assert str(problem) == text


def test_config_error_lists_problems_in_file_order_one_per_line() -> None:
    late = ConfigProblem(CONFIG_PATH, 9, 1, "landing", "late")
    early = ConfigProblem(CONFIG_PATH, 2, 5, "handle", "early")
    same_line = ConfigProblem(CONFIG_PATH, 2, 1, "pins", "first on line")
    error = ConfigError([late, early, same_line])
    assert error.problems == (same_line, early, late)
    assert str(error).splitlines() == [str(same_line), str(early), str(late)]
