"""The torch stable-ABI audit: a package directory or wheel -> verdicts per allowlist pattern.

It applies the rules of vLLM's ``.buildkite/check-torch-abi.py`` to what
torch-abi-audit reports, so ``check_lines`` and ``exit_code`` are what that
check would print and return, and goes further: per pattern it decides what a
follow-up PR should do, and it proposes a pattern for each unexpected
unstable library. Where the check would silently pass (no ``nm``, a library
that fails inspection) or audit the wrong build (CPU variants), this raises
``AuditError`` instead.

Everything here is synchronous and slow (one ``nm`` per library): the service
runs it through ``BlockingRunner``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from torch_abi_audit import inspect_extension
from torch_abi_audit.symbols import find_compiled_libraries

from bot.abi.elf import elf_problem
from bot.abi.model import (
    DEFAULT_VARIABLE,
    MSG_INSPECTION_FAILED,
    MSG_NO_LIBRARIES,
    MSG_NO_NM,
    MSG_NOT_WHEEL_OR_DIR,
    AuditError,
    AuditResult,
    Decision,
    LibraryVerdict,
    PatternVerdict,
)
from bot.abi.names import matches, patterns_by_path, propose_pattern, refuse_cpu_variant
from bot.abi.report import render_table, to_json
from bot.abi.wheel import extract_libraries

__all__ = [
    "DEFAULT_VARIABLE",
    "AuditError",
    "AuditResult",
    "LibraryVerdict",
    "PatternVerdict",
    "audit_directory",
    "audit_wheel",
    "judge",
    "nm_available",
    "patterns_by_path",
    "propose_pattern",
    "render_table",
    "to_json",
]

# vLLM's check, word for word (the variable name is the allowlist's own).
OUTSIDE_LINE = "Not allowed: torch-unstable libraries outside {variable}: {paths}"
STALE_LINE = "Not allowed: stale {variable} entries: {patterns}"

SHOWN_SYMBOLS = 5
# nm runs as a child process, so a few threads overlap them; more would only
# compete for the cores the service's other work needs.
_INSPECT_THREADS = 4


def nm_available() -> bool:
    """Whether the ``nm`` binary torch-abi-audit shells out to is on ``PATH``."""
    return shutil.which("nm") is not None


def audit_wheel(
    wheel: Path, allowlist: Sequence[str], *, workdir: Path, variable: str = DEFAULT_VARIABLE
) -> AuditResult:
    """Audit the package inside ``wheel``; its libraries are extracted under ``workdir``.

    The extracted copy is removed before returning, whatever the outcome.
    """
    if not nm_available():
        raise AuditError(MSG_NO_NM)
    with tempfile.TemporaryDirectory(prefix="audit-", dir=workdir) as scratch:
        root = extract_libraries(wheel, Path(scratch))
        return audit_directory(root, allowlist, variable=variable)


def audit_directory(
    root: Path, allowlist: Sequence[str], *, variable: str = DEFAULT_VARIABLE
) -> AuditResult:
    """Audit every compiled library under the package directory ``root``."""
    if not nm_available():
        raise AuditError(MSG_NO_NM)
    if not root.is_dir():
        raise AuditError(MSG_NOT_WHEEL_OR_DIR.format(target=root))
    relative = [path.relative_to(root).as_posix() for path in find_compiled_libraries(root)]
    if not relative:
        raise AuditError(MSG_NO_LIBRARIES.format(root=root))
    refuse_cpu_variant(relative)
    with ThreadPoolExecutor(max_workers=_INSPECT_THREADS) as pool:
        libraries = list(pool.map(lambda path: _inspect(root, path), relative))
    return judge(libraries, allowlist, variable=variable)


def _inspect(root: Path, relative: str) -> LibraryVerdict:
    path = root / relative
    # torch-abi-audit calls an unreadable file "no torch"; refuse it instead.
    problem = elf_problem(path)
    if problem is not None:
        raise AuditError(MSG_INSPECTION_FAILED.format(path=relative, reason=problem))
    report = inspect_extension(path)
    if report.error is not None:
        raise AuditError(MSG_INSPECTION_FAILED.format(path=relative, reason=report.error))
    torch = report.torch
    if not torch.uses_torch:
        return LibraryVerdict(relative, "no-torch")
    if torch.stable:
        return LibraryVerdict(relative, "stable")
    symbols = torch.unstable_symbols
    return LibraryVerdict(relative, "unstable", symbols[:SHOWN_SYMBOLS], len(symbols))


def judge(
    libraries: Sequence[LibraryVerdict],
    allowlist: Sequence[str],
    *,
    variable: str = DEFAULT_VARIABLE,
) -> AuditResult:
    """Apply vLLM's rules, and ours, to inspected ``libraries``."""
    ordered = tuple(sorted(libraries, key=lambda library: library.path))
    patterns = tuple(_judge_pattern(pattern, ordered) for pattern in allowlist)
    covered = {path for verdict in patterns for path in verdict.unstable}
    unexpected = tuple(
        library for library in ordered if library.kind == "unstable" and library.path not in covered
    )
    proposed = patterns_by_path(
        [library.path for library in unexpected], others=[library.path for library in ordered]
    )

    lines: list[str] = []
    if unexpected:
        paths = ", ".join(library.path for library in unexpected)
        lines.append(OUTSIDE_LINE.format(variable=variable, paths=paths))
    stale = [verdict.pattern for verdict in patterns if verdict.other]
    if stale:
        lines.append(STALE_LINE.format(variable=variable, patterns=", ".join(stale)))
    return AuditResult(
        libraries=ordered,
        patterns=patterns,
        unexpected=unexpected,
        proposed=proposed,
        check_lines=tuple(lines),
        exit_code=1 if lines else 0,
        variable=variable,
    )


def _judge_pattern(pattern: str, libraries: Sequence[LibraryVerdict]) -> PatternVerdict:
    matched = [library for library in libraries if matches(library.path, pattern)]
    unstable = tuple(library.path for library in matched if library.kind == "unstable")
    other = tuple(library.path for library in matched if library.kind != "unstable")
    replacement: tuple[str, ...] = ()
    decision: Decision
    if unstable and other:
        # vLLM's check calls this pattern stale, but deleting it would leave
        # ``unstable`` outside the allowlist: replace it by patterns for those only.
        decision = "narrow"
        replacement = propose_pattern(unstable, others=[library.path for library in libraries])
    elif other:
        decision = "delete"
    elif unstable:
        decision = "keep"
    else:
        # Matches nothing in this build: the list is shared with other platforms
        # (the ROCm entries on a CUDA build), so this is no evidence to delete it.
        decision = "not-on-this-platform"
    return PatternVerdict(pattern, unstable, other, decision, replacement)
