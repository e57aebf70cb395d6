"""``bot.pins.discover``: every pin of a vLLM-shaped checkout, and the config it proposes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.config.models import CompanionConfig
from bot.config.parse import parse_repo_config
from bot.pins import discover_yaml
from bot.pins import sync_comments as discover_sync
from bot.pins.discover import FoundPin, Skipped, cmake_files, discover, kind_of, to_json
from bot.pins.discover_yaml import config_block, github_upstream, pin_name
from bot.pins.sync_comments import Companion
from sandbox.vllm_tree import (
    CUTLASS_TAG,
    DEEPGEMM_SCRIPT,
    DEEPGEMM_SHA,
    EXTERNAL,
    FLASH_ATTN_SHA,
    FLASHMLA_SHA,
    QUTLASS_SHA,
    TRITON_KERNELS_TAG,
    write_vllm_tree,
)
from tests import pin_literal_shapes as shapes

# Not editable: GIT_TAG mixes text and a variable; and a pin declared with GIT_TAG twice.
MIXED = """\
include(FetchContent)
FetchContent_Declare(
  mixed
  GIT_REPOSITORY https://gitlab.com/group/mixed.git
  GIT_TAG "${MIXED_VERSION}-rc"
)
"""
TWICE = """\
if(USE_FORK)
  FetchContent_Declare(twice GIT_REPOSITORY https://github.com/a/twice.git GIT_TAG main)
else()
  FetchContent_Declare(twice GIT_REPOSITORY https://github.com/b/twice.git GIT_TAG dev)
endif()
"""
# Would be found if the walk went where it must not.
DECOY = "FetchContent_Declare(decoy GIT_REPOSITORY https://github.com/x/decoy GIT_TAG v1.0.0)\n"


def line_of(text: str, needle: str, start: int = 0) -> int:
    return text.count("\n", 0, text.index(needle, start)) + 1


def by_dependency(root: Path) -> dict[str, FoundPin]:
    found = discover(root)
    assert found.skipped == ()
    pins = {pin.dependency: pin for pin in found.pins}
    assert len(pins) == len(found.pins)  # each dependency reported once
    return pins


def test_every_vllm_pin_is_found_with_its_kind(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    pins = by_dependency(tmp_path)
    assert {name: (pin.file, pin.kind, pin.value, pin.editable) for name, pin in pins.items()} == {
        "cutlass": ("CMakeLists.txt", "tag", CUTLASS_TAG, True),
        "vllm-flash-attn": (f"{EXTERNAL}/vllm_flash_attn.cmake", "sha", FLASH_ATTN_SHA, True),
        "deepgemm": (f"{EXTERNAL}/deepgemm.cmake", "sha", DEEPGEMM_SHA, True),
        "flashmla": (f"{EXTERNAL}/flashmla.cmake", "sha", FLASHMLA_SHA, True),
        "qutlass": (f"{EXTERNAL}/qutlass.cmake", "sha", QUTLASS_SHA, True),
        "triton_kernels": (
            f"{EXTERNAL}/triton_kernels.cmake",
            "tag",
            TRITON_KERNELS_TAG,
            True,
        ),
    }
    assert pins["flashmla"].repository == "https://github.com/vllm-project/FlashMLA"
    assert all(pin.reason is None for pin in pins.values())


def test_cutlass_is_a_shallow_tag_set_through_its_variable(tmp_path: Path) -> None:
    text = write_vllm_tree(tmp_path)["CMakeLists.txt"]
    cutlass = by_dependency(tmp_path)["cutlass"]
    assert cutlass.shallow
    assert (cutlass.variable, cutlass.variable_line) == (
        "CUTLASS_REVISION",
        line_of(text, "set(CUTLASS_REVISION"),
    )
    # "keep the tag in sync with CUTLASS_REVISION" names a variable: no companion, no noise.
    assert (cutlass.companions, cutlass.sync_problems) == ((), ())
    assert not any(
        pin.shallow for name, pin in by_dependency(tmp_path).items() if name != "cutlass"
    )


@pytest.mark.parametrize(
    ("dependency", "file", "local"),
    [
        ("cutlass", "CMakeLists.txt", "FetchContent_Declare(cutlass SOURCE_DIR"),
        ("vllm-flash-attn", f"{EXTERNAL}/vllm_flash_attn.cmake", "vllm-flash-attn SOURCE_DIR"),
        ("deepgemm", f"{EXTERNAL}/deepgemm.cmake", "deepgemm\n    SOURCE_DIR"),
        ("flashmla", f"{EXTERNAL}/flashmla.cmake", "FetchContent_Declare(flashmla SOURCE_DIR"),
    ],
)
def test_if_else_declarations_are_one_pin_at_the_editable_one(
    tmp_path: Path, dependency: str, file: str, local: str
) -> None:
    text = write_vllm_tree(tmp_path)[file]
    pin = by_dependency(tmp_path)[dependency]
    assert pin.editable
    assert len(pin.others) == 1
    assert pin.others[0] <= line_of(text, local) < pin.line  # the SOURCE_DIR branch comes first


def test_qutlass_and_triton_kernels_are_declared_once(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    pins = by_dependency(tmp_path)
    assert (pins["qutlass"].others, pins["triton_kernels"].others) == ((), ())


def test_deepgemm_proposes_its_install_script_as_a_companion(tmp_path: Path) -> None:
    script = write_vllm_tree(tmp_path)[DEEPGEMM_SCRIPT]
    deepgemm = by_dependency(tmp_path)["deepgemm"]
    [companion] = deepgemm.companions
    assert companion.config == CompanionConfig(file=DEEPGEMM_SCRIPT, variable="DEEPGEMM_GIT_REF")
    assert (companion.line, companion.value) == (line_of(script, "DEEPGEMM_GIT_REF="), DEEPGEMM_SHA)
    assert deepgemm.sync_problems == ()


def test_a_companion_out_of_sync_is_a_problem_not_a_proposal(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path, deepgemm_script="1" * 40)
    deepgemm = by_dependency(tmp_path)["deepgemm"]
    assert deepgemm.companions == ()
    assert deepgemm.sync_problems == (
        discover_sync.PROBLEM_NO_VALUE.format(file=DEEPGEMM_SCRIPT, value=DEEPGEMM_SHA),
    )


def test_a_missing_companion_file_is_a_problem(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    (tmp_path / DEEPGEMM_SCRIPT).unlink()
    deepgemm = by_dependency(tmp_path)["deepgemm"]
    assert deepgemm.sync_problems == (discover_sync.PROBLEM_MISSING.format(target=DEEPGEMM_SCRIPT),)


def test_uneditable_pins_are_listed_with_the_reason(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    (tmp_path / "cmake/mixed.cmake").write_text(MIXED)
    (tmp_path / "cmake/twice.cmake").write_text(TWICE)
    pins = by_dependency(tmp_path)
    mixed, twice = pins["mixed"], pins["twice"]
    assert (mixed.editable, mixed.kind, mixed.repository) == (
        False,
        "other",
        "https://gitlab.com/group/mixed.git",
    )
    assert mixed.reason is not None
    assert "mixes text and a variable reference" in mixed.reason
    assert not twice.editable
    assert twice.reason is not None
    assert "more than once" in twice.reason
    assert twice.others == (line_of(TWICE, "dev)"),)


def test_the_walk_skips_git_build_trees_and_other_files(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    for decoy in (
        ".git/modules/CMakeLists.txt",
        "build/_deps/cutlass-src/CMakeLists.txt",
        "cmake-build-debug/x.cmake",
        "out/CMakeCache.txt",
        "out/_deps/decoy.cmake",
        "cmake/notes.txt",
        "cmake/x.cmake.in",
    ):
        path = tmp_path / decoy
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DECOY)
    assert "decoy" not in by_dependency(tmp_path)
    assert cmake_files(tmp_path) == [
        "CMakeLists.txt",
        *(
            f"{EXTERNAL}/{name}.cmake"
            for name in ("deepgemm", "flashmla", "qutlass", "triton_kernels", "vllm_flash_attn")
        ),
    ]


def test_unreadable_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "bad.cmake").write_bytes(b"\xff FetchContent_Declare(")
    (tmp_path / "broken.cmake").write_text("FetchContent_Declare(x GIT_TAG v1.0.0\n")
    found = discover(tmp_path)
    assert found.pins == ()
    assert [skipped.file for skipped in found.skipped] == ["bad.cmake", "broken.cmake"]
    assert found.skipped[0].reason == "not UTF-8 text"


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("f3e1a4f74c99145c0717709860bf765de1703779", "sha"),
        ("v4.4.2", "tag"),
        ("v3.6.0", "tag"),
        ("3.6.0", "tag"),
        ("cutlass-3.5.0", "tag"),
        ("v4.0.0-rc1", "tag"),
        ("main", "branch"),
        ("master", "branch"),
        ("release/next", "branch"),
        ("f3e1a4f", "other"),  # abbreviated: a commit, not what the bot writes
        ("${MIXED}-rc", "other"),
        ("", "other"),
        (None, "other"),
    ],
)
def test_kind_of(value: str | None, kind: str) -> None:
    assert kind_of(value) == kind


def test_json_has_exactly_the_documented_keys(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    document = to_json(discover(tmp_path))
    assert list(document) == ["pins"]
    keys = ["file", "line", "dependency", "repository", "value", "kind", "shallow"]
    keys += ["editable", "reason", "repeats", "companions"]
    assert all(list(pin) == keys for pin in document["pins"])
    [deepgemm] = [pin for pin in document["pins"] if pin["dependency"] == "deepgemm"]
    assert deepgemm["companions"] == [{"file": DEEPGEMM_SCRIPT, "line": 9, "value": DEEPGEMM_SHA}]


def test_the_proposed_block_is_a_valid_config(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    (tmp_path / "cmake/mixed.cmake").write_text(MIXED)
    block = config_block(discover(tmp_path).pins)
    config = parse_repo_config(block)
    pins = {pin.name: pin for pin in config.pins}
    assert list(pins) == [
        "cutlass",
        "deepgemm",
        "flashmla",
        "qutlass",
        "triton_kernels",
        "vllm-flash-attn",
    ]
    assert (pins["cutlass"].upstream, pins["cutlass"].track) == ("nvidia/cutlass", "tags")
    assert (pins["triton_kernels"].track, pins["triton_kernels"].tags) == ("tags", "v*")
    assert (pins["flashmla"].upstream, pins["flashmla"].branch) == ("vllm-project/FlashMLA", "main")
    assert pins["deepgemm"].also == (
        CompanionConfig(file=DEEPGEMM_SCRIPT, variable="DEEPGEMM_GIT_REF"),
    )
    assert pins["vllm-flash-attn"].upstream == "vllm-project/flash-attention"
    left_out = discover_yaml.WHY_UNEDITABLE.split(":")[0]
    assert f"  # mixed (cmake/mixed.cmake:2) is left out: {left_out}" in block


@pytest.mark.parametrize(
    ("url", "upstream"),
    [
        ("https://github.com/vllm-project/flash-attention.git", "vllm-project/flash-attention"),
        ("https://github.com/vllm-project/FlashMLA", "vllm-project/FlashMLA"),
        ("git@github.com:deepseek-ai/DeepGEMM.git", "deepseek-ai/DeepGEMM"),
        ("ssh://git@github.com/nvidia/cutlass.git", "nvidia/cutlass"),
        ("https://gitlab.com/group/mixed.git", None),
        ("https://github.com/only-owner", None),
        ("${REPO_URL}", None),
        (None, None),
    ],
)
def test_github_upstream(url: str | None, upstream: str | None) -> None:
    assert github_upstream(url) == upstream


@pytest.mark.parametrize(
    ("dependency", "name"),
    [("vllm-flash-attn", "vllm-flash-attn"), ("c++lib", "c-lib"), ("_x.lock", "x"), ("+", "pin")],
)
def test_pin_names_from_dependencies(dependency: str, name: str) -> None:
    assert pin_name(dependency) == name


def test_a_dependency_declared_only_with_source_dir_has_no_value(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text(
        "project(x)\nFetchContent_Declare(local SOURCE_DIR ${LOCAL_DIR})\n"
    )
    (tmp_path / "empty.cmake").write_text("message(STATUS nothing to fetch)\n")
    [pin] = discover(tmp_path).pins
    assert (pin.line, pin.repository, pin.raw, pin.value, pin.kind) == (
        2,
        None,
        None,
        None,
        "other",
    )
    assert not pin.editable
    assert pin.reason is not None
    assert "has no GIT_TAG" in pin.reason


def test_a_file_that_cannot_be_read_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "CMakeLists.txt").write_text(DECOY)

    def refuse(path: Path) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert discover(tmp_path).skipped == (
        Skipped("CMakeLists.txt", "cannot read: Permission denied"),
    )


BASE = FoundPin(
    file="cmake/x.cmake",
    line=3,
    dependency="x",
    repository="https://github.com/o/x.git",
    value="1" * 40,
    kind="sha",
    raw="1" * 40,
    shallow=False,
    editable=True,
    reason=None,
)


def found(**fields: Any) -> FoundPin:
    return replace(BASE, **fields)


def test_the_block_says_why_each_pin_is_left_out() -> None:
    pins = [
        found(repository=None),
        found(repository="https://gitlab.com/o/x.git"),
        found(kind="branch", value="main", shallow=True),
        found(editable=False, reason="why not"),
    ]
    assert config_block(pins) == "\n".join(
        [
            "pins: []",
            "  # x (cmake/x.cmake:3) is left out: " + discover_yaml.WHY_NO_REPOSITORY,
            "  # x (cmake/x.cmake:3) is left out: "
            + discover_yaml.WHY_NO_UPSTREAM.format(repository="https://gitlab.com/o/x.git"),
            "  # x (cmake/x.cmake:3) is left out: "
            + discover_yaml.WHY_SHALLOW_BRANCH.format(value="main"),
            "  # x (cmake/x.cmake:3) is left out: "
            + discover_yaml.WHY_UNEDITABLE.format(reason="why not"),
            "",
        ]
    )


def test_the_block_writes_branches_tag_families_and_every_companion_form() -> None:
    pattern = CompanionConfig(file="docker/Dockerfile", pattern="RUN git checkout ([0-9a-f]{40})")
    shell = CompanionConfig(file="tools/get", variable="REF", format="shell")
    pins = [
        found(kind="branch", value="develop", dependency="on"),
        found(kind="tag", value="cutlass-3.5.0", dependency="ON", file="cmake/y.cmake"),
        found(
            companions=(Companion(pattern, 2, "1" * 40), Companion(shell, 1, "1" * 40)),
            dependency="1.0",
        ),
    ]
    block = config_block(pins)
    config = parse_repo_config(block)
    assert [(pin.name, pin.track, pin.branch, pin.tags) for pin in config.pins] == [
        ("on", "branch", "develop", "v*"),
        ("ON-2", "tags", "main", "cutlass-*"),
        ("1.0", "branch", "main", "v*"),
    ]
    assert config.pins[2].also == (pattern, shell)
    assert '  - name: "on"\n' in block  # plain, YAML would read a boolean


# --- a pin's value written twice, and vLLM's real install script ---------------------


def write_literal_shapes(root: Path, *, cutlass: str, deepgemm: str) -> dict[str, str]:
    """vLLM's early-2025 CMakeLists.txt and the real DeepGEMM files (tests.pin_literal_shapes)."""
    files = {
        shapes.CUTLASS_FILE: shapes.cutlass_cmakelists(cutlass),
        shapes.DEEPGEMM_CMAKE_FILE: shapes.deepgemm_cmake(deepgemm),
        shapes.DEEPGEMM_SCRIPT_FILE: shapes.install_deepgemm(deepgemm),
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return files


def test_the_cutlass_tag_written_twice_is_reported_as_one_pin_with_its_repeat(
    tmp_path: Path,
) -> None:
    files = write_literal_shapes(tmp_path, cutlass="v3.8.0", deepgemm=DEEPGEMM_SHA)
    text = files["CMakeLists.txt"]

    cutlass = by_dependency(tmp_path)["cutlass"]

    declared = line_of(text, "FetchContent_Declare(\n        cutlass")
    assert (cutlass.value, cutlass.line, cutlass.variable) == ("v3.8.0", declared, None)
    assert cutlass.repeats == (line_of(text, "set(CUTLASS_REVISION"),)
    assert cutlass.editable
    # The comments name the other line, not a file: no companion, no problem.
    assert (cutlass.companions, cutlass.sync_problems) == ((), ())
    assert by_dependency(tmp_path)["vllm-flash-attn"].repeats == ()


def test_the_proposed_block_says_where_the_value_repeats_and_proposes_no_also(
    tmp_path: Path,
) -> None:
    files = write_literal_shapes(tmp_path, cutlass="v3.8.0", deepgemm=DEEPGEMM_SHA)
    text = files["CMakeLists.txt"]

    block = config_block(discover(tmp_path).pins)

    repeated = discover_yaml.REPEATED.format(
        file="CMakeLists.txt", value="v3.8.0", s="", lines=line_of(text, "set(CUTLASS_REVISION")
    )
    assert repeated in block.splitlines()
    pins = {pin.name: pin for pin in parse_repo_config(block).pins}
    assert pins["cutlass"].also == ()
    assert (pins["cutlass"].track, pins["cutlass"].file) == ("tags", "CMakeLists.txt")


def test_several_repeats_are_listed_in_the_block() -> None:
    pin = FoundPin(
        file="CMakeLists.txt",
        line=9,
        dependency="cutlass",
        repository="https://github.com/nvidia/cutlass.git",
        value="v3.8.0",
        kind="tag",
        raw="v3.8.0",
        shallow=True,
        editable=True,
        reason=None,
        repeats=(3, 14),
    )

    expected = "    # CMakeLists.txt also holds v3.8.0 at lines 3, 14: changed with the pin"
    assert expected in config_block([pin]).splitlines()


def test_the_real_install_script_is_proposed_as_its_variable(tmp_path: Path) -> None:
    # The script also assigns DEEPGEMM_GIT_REF="$2" under --ref): still the variable.
    write_literal_shapes(tmp_path, cutlass="v3.8.0", deepgemm=DEEPGEMM_SHA)

    deepgemm = by_dependency(tmp_path)["deepgemm"]

    assert deepgemm.companions == (
        Companion(
            CompanionConfig(file=shapes.DEEPGEMM_SCRIPT_FILE, variable="DEEPGEMM_GIT_REF"),
            shapes.default_ref_line(shapes.install_deepgemm(DEEPGEMM_SHA)),
            DEEPGEMM_SHA,
        ),
    )
    assert deepgemm.sync_problems == ()
    pins = {pin.name: pin for pin in parse_repo_config(config_block([deepgemm])).pins}
    assert pins["deepgemm"].also == (
        CompanionConfig(file=shapes.DEEPGEMM_SCRIPT_FILE, variable="DEEPGEMM_GIT_REF"),
    )
