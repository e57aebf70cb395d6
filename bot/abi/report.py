"""The audit result for people (a table) and for programs (JSON-ready data)."""

from __future__ import annotations

from bot.abi.model import AuditResult, Decision, LibraryVerdict, PatternVerdict

TABLE_TITLE = "{variable}: {count} pattern(s) against {libraries} libraries"
NO_PATTERNS = "  (the allowlist is empty)"
UNEXPECTED_TITLE = "Torch-unstable libraries outside {variable}: {count}"
SUMMARY = "Libraries: {unstable} unstable, {stable} stable, {none} no-torch"

DECISION_NOTES: dict[Decision, str] = {
    "delete": "matches no unstable library: remove it",
    "narrow": "matches unstable and other libraries: replace it",
    "keep": "matches only unstable libraries",
    "not-on-this-platform": "matches no library in this build: kept (other platforms may need it)",
}

_HEADERS = ("PATTERN", "UNSTABLE", "OTHER", "DECISION")


def render_table(result: AuditResult) -> str:
    """The per-pattern table, then each unexpected library with its proposed pattern."""
    lines = [_summary(result.libraries), ""]
    lines.append(
        TABLE_TITLE.format(
            variable=result.variable,
            count=len(result.patterns),
            libraries=len(result.libraries),
        )
    )
    lines.extend(_pattern_table(result.patterns) if result.patterns else [NO_PATTERNS])
    if result.unexpected:
        lines.append("")
        lines.append(
            UNEXPECTED_TITLE.format(variable=result.variable, count=len(result.unexpected))
        )
        for library in result.unexpected:
            lines.extend(_unexpected(library, result.proposed[library.path]))
    return "\n".join(lines) + "\n"


def _summary(libraries: tuple[LibraryVerdict, ...]) -> str:
    kinds = [library.kind for library in libraries]
    return SUMMARY.format(
        unstable=kinds.count("unstable"), stable=kinds.count("stable"), none=kinds.count("no-torch")
    )


def _pattern_table(patterns: tuple[PatternVerdict, ...]) -> list[str]:
    rows = [
        (verdict.pattern, str(len(verdict.unstable)), str(len(verdict.other)), verdict.decision)
        for verdict in patterns
    ]
    widths = [max(len(row[column]) for row in [_HEADERS, *rows]) for column in range(3)]
    lines = [_row(_HEADERS, widths)]
    for row, verdict in zip(rows, patterns, strict=True):
        lines.append(_row(row, widths))
        lines.append(f"      {DECISION_NOTES[verdict.decision]}")
        lines.extend(f"      unstable: {path}" for path in verdict.unstable)
        lines.extend(f"      other:    {path}" for path in verdict.other)
        lines.extend(f"      replace with: {pattern}" for pattern in verdict.replacement)
    return lines


def _row(cells: tuple[str, str, str, str], widths: list[int]) -> str:
    pattern, unstable, other, decision = cells
    return (
        f"  {pattern:<{widths[0]}}  {unstable:>{widths[1]}}  {other:>{widths[2]}}  {decision}"
    ).rstrip()


def _unexpected(library: LibraryVerdict, pattern: str) -> list[str]:
    lines = [f"  {library.path}", f'      propose: "{pattern}",']
    if library.unstable_symbols:
        lines.append(f"      {library.unstable_count} unstable symbol(s), first:")
        lines.extend(f"        {symbol}" for symbol in library.unstable_symbols)
    return lines


def to_json(result: AuditResult) -> dict[str, object]:
    """The whole result as JSON-ready data (the check's lines included)."""
    return {
        "variable": result.variable,
        "exit_code": result.exit_code,
        "passed": result.exit_code == 0,
        "check_lines": list(result.check_lines),
        "libraries": [_library(library) for library in result.libraries],
        "patterns": [
            {
                "pattern": verdict.pattern,
                "decision": verdict.decision,
                "unstable": list(verdict.unstable),
                "other": list(verdict.other),
                "replacement": list(verdict.replacement),
            }
            for verdict in result.patterns
        ],
        "unexpected": [
            _library(library) | {"proposed": result.proposed[library.path]}
            for library in result.unexpected
        ],
        "proposed": dict(result.proposed),
    }


def _library(library: LibraryVerdict) -> dict[str, object]:
    return {
        "path": library.path,
        "kind": library.kind,
        "unstable_count": library.unstable_count,
        "unstable_symbols": list(library.unstable_symbols),
    }
