"""``followup-bot discover`` and ``check-config --repo`` on a vLLM-shaped checkout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import discover as cli
from bot.cli.check_checkout import summary
from bot.cli.main import main
from bot.config import messages as msg
from bot.config.parse import parse_repo_config
from bot.edit.cmake_pin import MSG_NOT_FOUND
from bot.pins import checkout_check as check
from bot.pins.sync_comments import PROBLEM_NO_VALUE
from sandbox.vllm_tree import (
    CUTLASS_TAG,
    DEEPGEMM_SCRIPT,
    DEEPGEMM_SHA,
    EXTERNAL,
    TREE_CONFIG,
    TRITON_KERNELS_TAG,
    write_vllm_tree,
)

DEEPGEMM = f"{EXTERNAL}/deepgemm.cmake"
FLASH_ATTN = f"{EXTERNAL}/vllm_flash_attn.cmake"
KEYS = ["file", "line", "dependency", "repository", "value", "kind", "shallow", "editable"]
KEYS += ["reason", "repeats", "companions"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_discover_prints_every_pin_then_the_config_to_paste(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_vllm_tree(tmp_path)
    code, out, err = run(capsys, "discover", "--repo", str(tmp_path))
    assert (code, err) == (0, "")
    deepgemm = [
        cli.MSG_PIN.format(file=DEEPGEMM, line=18, dependency="deepgemm"),
        cli.MSG_REPOSITORY.format(repository="https://github.com/deepseek-ai/DeepGEMM.git"),
        cli.MSG_VALUE.format(value=DEEPGEMM_SHA, kind="sha"),
        cli.MSG_OTHERS.format(s="", lines="10"),
        cli.MSG_COMPANION.format(
            file=DEEPGEMM_SCRIPT,
            line=9,
            how=cli.HOW_VARIABLE.format(variable="DEEPGEMM_GIT_REF"),
            value=DEEPGEMM_SHA,
        ),
    ]
    assert "\n".join(deepgemm) + "\n" in out
    cutlass = [
        cli.MSG_PIN.format(file="CMakeLists.txt", line=16, dependency="cutlass"),
        cli.MSG_REPOSITORY.format(repository="https://github.com/nvidia/cutlass.git"),
        cli.MSG_VALUE_VIA.format(
            value=CUTLASS_TAG, kind="tag", variable="CUTLASS_REVISION", line=7
        ),
        cli.MSG_SHALLOW,
        cli.MSG_OTHERS.format(s="", lines="14"),
    ]
    assert "\n".join(cutlass) + "\n" in out
    count = cli.MSG_COUNT.format(pins="6 pins", files="6 files", uneditable=0)
    report, block = out.split(f"\n{count}\n\n{cli.MSG_PASTE}\n\n")
    # cutlass, deepgemm, flashmla, qutlass, triton_kernels, vllm-flash-attn: nothing else
    assert report.count("\n") == 5 + 5 + 4 + 3 + 3 + 4
    config = parse_repo_config(block)
    assert len(config.pins) == 6


def test_discover_json_is_exactly_the_documented_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_vllm_tree(tmp_path)
    code, out, err = run(capsys, "discover", "--repo", str(tmp_path), "--json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert list(document) == ["pins"]
    assert all(list(pin) == KEYS for pin in document["pins"])
    pins = {pin["dependency"]: pin for pin in document["pins"]}
    assert {name: pin["kind"] for name, pin in pins.items()} == {
        "cutlass": "tag",
        "deepgemm": "sha",
        "flashmla": "sha",
        "qutlass": "sha",
        "triton_kernels": "tag",
        "vllm-flash-attn": "sha",
    }
    assert pins["triton_kernels"]["value"] == TRITON_KERNELS_TAG  # through ${VAR}
    assert pins["cutlass"] == {
        "file": "CMakeLists.txt",
        "line": 16,
        "dependency": "cutlass",
        "repository": "https://github.com/nvidia/cutlass.git",
        "value": CUTLASS_TAG,
        "kind": "tag",
        "shallow": True,
        "editable": True,
        "reason": None,
        "repeats": [],
        "companions": [],
    }
    assert pins["deepgemm"]["companions"] == [
        {"file": DEEPGEMM_SCRIPT, "line": 9, "value": DEEPGEMM_SHA}
    ]


def test_discover_exits_0_with_uneditable_pins_and_warns_of_unreadable_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "CMakeLists.txt").write_text(
        "FetchContent_Declare(x GIT_REPOSITORY https://github.com/o/x GIT_TAG ${V}-rc)\n"
        "FetchContent_Declare(local SOURCE_DIR ${LOCAL_DIR})\n"
    )
    (tmp_path / "bad.cmake").write_bytes(b"\xff")
    code, out, err = run(capsys, "discover", "--repo", str(tmp_path))
    assert code == 0
    assert err == cli.MSG_SKIPPED.format(file="bad.cmake", reason="not UTF-8 text") + "\n"
    assert cli.MSG_RAW_ONLY.format(raw="${V}-rc") in out
    local = cli.MSG_PIN.format(file="CMakeLists.txt", line=2, dependency="local")
    assert f"\n{local}\n{cli.MSG_NO_VALUE}\n{cli.MSG_UNEDITABLE.split('{')[0]}" in out
    assert cli.MSG_UNEDITABLE.split("{")[0] in out
    assert "\npins: []\n  # x (CMakeLists.txt:1) is left out: " in out


def test_discover_without_pins_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "discover", "--repo", str(tmp_path)) == (
        0,
        cli.MSG_NONE.format(repo=tmp_path) + "\n",
        "",
    )


@pytest.mark.parametrize("command", [["discover"], ["check-config", "cfg.yml"]])
def test_a_repo_that_is_not_a_directory_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    (tmp_path / "cfg.yml").write_text(TREE_CONFIG)
    for repo in (tmp_path / "missing", tmp_path / "cfg.yml"):
        args = [arg if arg != "cfg.yml" else str(tmp_path / arg) for arg in command]
        assert run(capsys, *args, "--repo", str(repo)) == (
            2,
            "",
            cli.MSG_NOT_A_DIRECTORY.format(repo=repo) + "\n",
        )


def check_repo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str = TREE_CONFIG
) -> tuple[int, str, str]:
    path = tmp_path / "followup-bot.yml"
    path.write_text(config)
    return run(capsys, "check-config", str(path), "--repo", str(tmp_path / "vllm"))


def test_check_config_repo_accepts_the_matching_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_vllm_tree(tmp_path / "vllm")
    ok = msg.MSG_CHECK_OK.format(summary=summary(parse_repo_config(TREE_CONFIG)))
    assert check_repo(tmp_path, capsys) == (
        0,
        f"{ok}\n{msg.MSG_CHECKOUT_OK.format(pins='3 pins')}\n",
        "",
    )


def test_check_config_repo_names_the_file_out_of_sync(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_vllm_tree(tmp_path / "vllm", deepgemm_script="1" * 40)
    code, out, err = check_repo(tmp_path, capsys)
    assert out == ""  # no "ok" above an error
    out_of_sync = check.PROBLEM_OUT_OF_SYNC.format(
        value="1" * 40, pinned=DEEPGEMM_SHA, file=DEEPGEMM, line=21
    )
    assert code == 1
    assert err.splitlines() == [
        check.PROBLEM.format(where=f"{DEEPGEMM_SCRIPT}:9", name="deepgemm", problem=out_of_sync),
        msg.MSG_CHECKOUT_FAILED.format(problems="1 problem"),
    ]


def test_check_config_repo_reports_missing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_vllm_tree(tmp_path / "vllm")
    (tmp_path / "vllm" / FLASH_ATTN).unlink()
    (tmp_path / "vllm" / DEEPGEMM_SCRIPT).unlink()
    code, _, err = check_repo(tmp_path, capsys)
    assert code == 1
    assert err.splitlines() == [
        check.PROBLEM.format(
            where=FLASH_ATTN, name="vllm-flash-attn", problem=check.PROBLEM_NO_FILE
        ),
        check.PROBLEM.format(
            where=DEEPGEMM_SCRIPT, name="deepgemm", problem=check.PROBLEM_NO_COMPANION_FILE
        ),
        msg.MSG_CHECKOUT_FAILED.format(problems="2 problems"),
    ]


def test_check_config_repo_reports_a_dependency_not_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_vllm_tree(tmp_path / "vllm")
    config = TREE_CONFIG.replace("dependency: cutlass", "dependency: cutlas")
    code, _, err = check_repo(tmp_path, capsys, config)
    not_found = MSG_NOT_FOUND.format(
        dependency="cutlas", filename="CMakeLists.txt", declared="'cutlass'"
    )
    assert code == 1
    assert err.splitlines()[0].startswith(
        check.PROBLEM.format(where="CMakeLists.txt", name="cutlass", problem="")
        + not_found.split(";")[0]
    )


def test_check_config_repo_reports_another_repository_and_a_shallow_branch_pin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = write_vllm_tree(tmp_path / "vllm")["CMakeLists.txt"]
    shallow = text.count("\n", 0, text.index("GIT_SHALLOW TRUE")) + 1
    config = TREE_CONFIG.replace("upstream: nvidia/cutlass", "upstream: fork/cutlass")
    config = config.replace("    track: tags\n", "")
    code, _, err = check_repo(tmp_path, capsys, config)
    other = check.PROBLEM_OTHER_REPOSITORY.format(
        repository="https://github.com/nvidia/cutlass.git", upstream="fork/cutlass"
    )
    assert code == 1
    assert err.splitlines() == [
        check.PROBLEM.format(where="CMakeLists.txt", name="cutlass", problem=other),
        check.PROBLEM.format(
            where=f"CMakeLists.txt:{shallow}",
            name="cutlass",
            problem=check.PROBLEM_SHALLOW_BRANCH.format(line=shallow),
        ),
        msg.MSG_CHECKOUT_FAILED.format(problems="2 problems"),
    ]


def test_check_config_repo_checks_nothing_in_an_invalid_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "vllm").mkdir()
    code, out, err = check_repo(tmp_path, capsys, "pinz: []\n")
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == msg.MSG_CHECK_FAILED.format(
        problems="1 problem", file=tmp_path / "followup-bot.yml"
    )


def test_discover_shows_a_sync_comment_that_led_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_vllm_tree(tmp_path, deepgemm_script="1" * 40)
    code, out, _ = run(capsys, "discover", "--repo", str(tmp_path))
    problem = PROBLEM_NO_VALUE.format(file=DEEPGEMM_SCRIPT, value=DEEPGEMM_SHA)
    assert code == 0
    assert cli.MSG_SYNC_PROBLEM.format(problem=problem) + "\n" in out
    assert "    also:" not in out  # nothing proposed for a file out of sync


def test_discover_names_the_lines_that_repeat_a_pins_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM's CMakeLists.txt of early 2025 wrote cutlass's tag in GIT_TAG and in
    set(CUTLASS_REVISION ...): both change with the pin, and discover says so."""
    from tests.pin_literal_shapes import CUTLASS_FILE, cutlass_cmakelists

    (tmp_path / CUTLASS_FILE).write_text(cutlass_cmakelists("v3.8.0"), encoding="utf-8")
    code, out, _ = run(capsys, "discover", "--repo", str(tmp_path))
    assert code == 0
    assert cli.MSG_REPEATS.format(s="", lines="10") in out
    code, out, _ = run(capsys, "discover", "--repo", str(tmp_path), "--json")
    [pin] = [pin for pin in json.loads(out)["pins"] if pin["dependency"] == "cutlass"]
    assert (pin["line"], pin["repeats"]) == (24, [10])  # the declaration, the set()
