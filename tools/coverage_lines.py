"""Merge coverage data files into one file of statement data, for ``make test``'s gate.

``make test`` measures in two parts: the pure modules' own tests with branches (coverage's C
tracer, the only one that measures branches before Python 3.14) and every other test with
statements only (``sys.monitoring``, next to free on Python 3.12+). coverage refuses to
combine branch data with statement data, so the lines each part ran are merged here; the
statement gate and its report of missing lines then read the merged file.

Usage: ``python tools/coverage_lines.py OUT DATA [DATA ...]``
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from coverage import CoverageData

USAGE = "usage: coverage_lines.py OUT DATA [DATA ...]"
MISSING = "coverage_lines.py: no coverage data in {path} (did its tests run?)"


def merged_lines(sources: Sequence[Path]) -> dict[str, set[int]]:
    """Each measured file's lines run in any of ``sources`` (lines or branch data)."""
    lines: dict[str, set[int]] = {}
    for source in sources:
        data = CoverageData(basename=str(source))
        data.read()
        if not data:
            raise FileNotFoundError(MISSING.format(path=source))
        for measured in data.measured_files():
            lines.setdefault(measured, set()).update(data.lines(measured) or ())
    return lines


def write_lines(target: Path, lines: dict[str, set[int]]) -> None:
    merged = CoverageData(basename=str(target))
    merged.erase()
    merged.add_lines(lines)
    merged.write()


def main(argv: Sequence[str]) -> int:
    if len(argv) < 2:
        print(USAGE, file=sys.stderr)
        return 2
    target, *sources = (Path(arg) for arg in argv)
    try:
        lines = merged_lines(sources)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    write_lines(target, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
