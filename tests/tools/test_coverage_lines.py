"""The merge of ``make test``'s two coverage parts (branch data and statement data)."""

from __future__ import annotations

from pathlib import Path

import pytest
from coverage import CoverageData

from tools.coverage_lines import MISSING, USAGE, main


def branch_data(path: Path, arcs: dict[str, list[tuple[int, int]]]) -> Path:
    data = CoverageData(basename=str(path))
    data.add_arcs(arcs)
    data.write()
    return path


def line_data(path: Path, lines: dict[str, list[int]]) -> Path:
    data = CoverageData(basename=str(path))
    data.add_lines(lines)
    data.write()
    return path


def test_the_lines_of_both_parts_are_merged_as_statement_data(tmp_path: Path) -> None:
    pure = branch_data(tmp_path / "pure", {"/a.py": [(-1, 1), (1, 3), (3, -1)]})
    rest = line_data(tmp_path / "rest", {"/a.py": [2, 3], "/b.py": [7]})
    out = tmp_path / "merged"
    assert main([str(out), str(pure), str(rest)]) == 0
    merged = CoverageData(basename=str(out))
    merged.read()
    assert not merged.has_arcs()
    assert {name: sorted(merged.lines(name) or ()) for name in merged.measured_files()} == {
        "/a.py": [1, 2, 3],
        "/b.py": [7],
    }


def test_a_part_that_wrote_no_data_fails_the_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rest = line_data(tmp_path / "rest", {"/a.py": [1]})
    out = tmp_path / "merged"
    assert main([str(out), str(rest), str(tmp_path / "absent")]) == 1
    assert capsys.readouterr().err == MISSING.format(path=tmp_path / "absent") + "\n"
    assert not out.exists()


def test_without_a_data_file_it_says_how_to_call_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["out"]) == 2
    assert capsys.readouterr().err == USAGE + "\n"
