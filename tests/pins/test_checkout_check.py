"""``bot.pins.checkout_check``: problems the editors report, in check-config's one-line form."""

from __future__ import annotations

from pathlib import Path

from bot.config.parse import parse_repo_config
from bot.pins.checkout_check import PROBLEM, PROBLEM_UNREADABLE, checkout_problems
from sandbox.vllm_tree import DEEPGEMM_SCRIPT, TREE_CONFIG, write_vllm_tree


def test_an_uneditable_pin_is_reported_at_the_editors_line(tmp_path: Path) -> None:
    text = write_vllm_tree(tmp_path)["CMakeLists.txt"]
    (tmp_path / "CMakeLists.txt").write_text(
        text.replace("GIT_TAG ${CUTLASS_REVISION}", "GIT_TAG ${CUTLASS_REVISION}-x")
    )
    line = text.count("\n", 0, text.index("GIT_TAG ${CUTLASS_REVISION}")) + 1
    [problem] = checkout_problems(tmp_path, parse_repo_config(TREE_CONFIG))
    assert problem.startswith(f"CMakeLists.txt:{line}: pin cutlass: GIT_TAG value ")


def test_a_companion_the_reader_refuses_is_reported_in_its_file(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    config = parse_repo_config(TREE_CONFIG.replace("variable: DEEPGEMM_GIT_REF", "variable: NOPE"))
    [problem] = checkout_problems(tmp_path, config)
    assert problem.startswith(DEEPGEMM_SCRIPT)
    assert ": pin deepgemm: " in problem


def test_a_companion_that_is_not_text_is_unreadable(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    (tmp_path / DEEPGEMM_SCRIPT).write_bytes(b"\xff\xfe")
    assert checkout_problems(tmp_path, parse_repo_config(TREE_CONFIG)) == [
        PROBLEM.format(where=DEEPGEMM_SCRIPT, name="deepgemm", problem=PROBLEM_UNREADABLE)
    ]


def test_a_pin_declared_twice_is_reported_in_its_file(tmp_path: Path) -> None:
    write_vllm_tree(tmp_path)
    pin_file = tmp_path / "cmake/external_projects/qutlass.cmake"
    text = pin_file.read_text()
    pin_file.write_text(text + text.replace("FetchContent_MakeAvailable(qutlass)\n", ""))
    config = parse_repo_config(
        "pins:\n  - name: qutlass\n    upstream: IST-DASLab/qutlass\n"
        "    file: cmake/external_projects/qutlass.cmake\n    dependency: qutlass\n"
    )
    [problem] = checkout_problems(tmp_path, config)
    assert problem.startswith("cmake/external_projects/qutlass.cmake: pin qutlass: dependency ")
    assert "more than once" in problem
