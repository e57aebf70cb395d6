"""The torch ABI audit's vocabulary: library and pattern verdicts, the result, its error.

Kept apart from ``bot.abi.judge`` so the wheel extractor and the report renderer can
use these types without importing the audit itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.core.errors import PermanentError

DEFAULT_VARIABLE = "ALLOWED_UNSTABLE_LIBRARIES"

Kind = Literal["unstable", "stable", "no-torch"]
Decision = Literal["delete", "narrow", "keep", "not-on-this-platform"]

# AuditError messages (the CLI prefixes them with "error: ").
MSG_NO_NM = (
    "'nm' (binutils) not found on PATH: torch-abi-audit cannot read any library, "
    "so no verdict is possible (refusing to report a pass)"
)
MSG_INSPECTION_FAILED = "failed to inspect {path}: {reason}"
MSG_CPU_VARIANT = (
    "CPU-variant build detected ({files}): audit the CUDA build; the CPU build's "
    "per-ISA libraries are unstable and never allowlisted, so its failures are false"
)
MSG_NOT_WHEEL_OR_DIR = "{target}: not a wheel (.whl) or a package directory"
MSG_NOT_A_WHEEL = "{wheel}: not a readable wheel: {reason}"
MSG_WHEEL_WITHOUT_SO = "{wheel}: no .so members in a package directory: nothing to audit"
MSG_NO_LIBRARIES = "{root}: no compiled libraries (*.so) found: nothing to audit"
MSG_UNSAFE_MEMBER = "{wheel}: refusing to extract member {name!r}: path leaves the package"
MSG_AMBIGUOUS_ROOT = "{wheel}: cannot tell the package root: .so members under {roots}"


class AuditError(PermanentError):
    """The audit cannot give a trustworthy answer (the CLI exits 2).

    A permanent error for the service: running the same audit again fails the
    same way until a tool is installed or the input changes.
    """


@dataclass(frozen=True)
class LibraryVerdict:
    """One compiled library of the package and what it uses of libtorch."""

    path: str  # relative to the package root, '/'-separated
    kind: Kind
    unstable_symbols: tuple[str, ...] = ()  # the first few, demangled
    unstable_count: int = 0  # all of them, including those not kept above


@dataclass(frozen=True)
class PatternVerdict:
    """One allowlist pattern: the libraries it matches and what to do with it."""

    pattern: str
    unstable: tuple[str, ...]  # matched unstable libraries, sorted
    other: tuple[str, ...]  # matched stable or no-torch libraries, sorted
    decision: Decision
    replacement: tuple[str, ...] = ()  # for "narrow": covers exactly ``unstable``


@dataclass(frozen=True)
class AuditResult:
    """Everything the audit found, in the terms of vLLM's check and beyond it."""

    libraries: tuple[LibraryVerdict, ...]  # sorted by path
    patterns: tuple[PatternVerdict, ...]  # in allowlist order
    unexpected: tuple[LibraryVerdict, ...]  # unstable and matched by no pattern
    proposed: dict[str, str]  # unexpected library path -> proposed allowlist pattern
    check_lines: tuple[str, ...]  # what vLLM's check prints to stderr; empty on success
    exit_code: int  # 0 or 1, as vLLM's check
    variable: str = DEFAULT_VARIABLE
