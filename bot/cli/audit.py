"""``followup-bot audit TARGET --allowlist-file PATH``: vLLM's torch ABI check, explained.

It prints exactly what ``.buildkite/check-torch-abi.py`` prints, with the same
exit code (0 passed, 1 not allowed), then what to do about each allowlist
pattern and each unexpected library. Where that check would pass without
evidence (no ``nm``, a library that cannot be read) or would audit the wrong
build (a CPU variant), this exits 2 instead.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TextIO

from torch_abi_audit.symbols import find_compiled_libraries

from bot.abi.judge import (
    DEFAULT_VARIABLE,
    AuditError,
    AuditResult,
    audit_directory,
    audit_wheel,
    nm_available,
    render_table,
    to_json,
)
from bot.abi.model import MSG_NO_NM, MSG_NOT_WHEEL_OR_DIR
from bot.abi.names import matches
from bot.edit.allowlist import AllowlistError, read_allowlist

EXIT_ERROR = 2

HEADER = ">>> Auditing vLLM extension modules for PyTorch stable ABI compliance"
PASSED = "Torch stable ABI check passed."
MSG_ERROR = "error: {reason}"
MSG_UNREADABLE = "{file}: cannot read the allowlist: {reason}"
WHEEL_SUFFIX = ".whl"
# The allowlist's patterns are paths relative to the installed ``vllm/`` package (vLLM's
# check audits it so): a directory above it (a checkout, site-packages) would make every
# entry look stale. A directory none of whose libraries any pattern matches is refused.
MSG_WRONG_DIRECTORY = (
    "{target}: none of its {count} librar{ies} matches a pattern of the allowlist: "
    "audit the vllm/ package directory itself (the one holding _C.abi3.so){hint}"
)
MSG_HINT = ", e.g. {package}"


def audit_command(
    target: Path,
    allowlist_file: Path,
    *,
    variable: str = DEFAULT_VARIABLE,
    as_json: bool = False,
    out: TextIO,
    err: TextIO,
) -> int:
    """Audit ``target`` (a wheel or a package directory) against the allowlist file.

    Text mode: the header, then vLLM's lines (``Not allowed: ...`` on ``err``,
    or the pass line on ``out``), then the table on ``out``. JSON mode: one
    document on ``out``. Errors: one ``error: ...`` line on ``err``, exit 2.
    """
    if not as_json:
        print(HEADER, file=out)
    try:
        result = _audit(target, _read_entries(allowlist_file, variable), variable)
    except (AuditError, AllowlistError) as exc:
        out.flush()
        print(MSG_ERROR.format(reason=exc), file=err)
        return EXIT_ERROR

    if as_json:
        json.dump(to_json(result), out, indent=2)
        out.write("\n")
        return result.exit_code
    if result.check_lines:
        out.flush()  # the header first, where both streams reach one terminal
        for line in result.check_lines:
            print(line, file=err)
        err.flush()
    else:
        print(PASSED, file=out)
    out.write("\n" + render_table(result))
    return result.exit_code


def _read_entries(allowlist_file: Path, variable: str) -> tuple[str, ...]:
    try:
        text = allowlist_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise AuditError(MSG_UNREADABLE.format(file=allowlist_file, reason=reason)) from exc
    return read_allowlist(text, variable=variable, filename=str(allowlist_file)).entries


def _audit(target: Path, allowlist: tuple[str, ...], variable: str) -> AuditResult:
    # Checked here too, before any extraction: a missing tool must never cost a
    # 300 MB unzip first, nor look like anything but an error.
    if not nm_available():
        raise AuditError(MSG_NO_NM)
    if target.is_dir():
        _refuse_a_directory_the_allowlist_does_not_describe(target, allowlist)
        return audit_directory(target, allowlist, variable=variable)
    if target.is_file() and target.name.endswith(WHEEL_SUFFIX):
        with tempfile.TemporaryDirectory(prefix="followup-bot-audit-") as workdir:
            return audit_wheel(target, allowlist, workdir=Path(workdir), variable=variable)
    raise AuditError(MSG_NOT_WHEEL_OR_DIR.format(target=target))


def _refuse_a_directory_the_allowlist_does_not_describe(
    target: Path, allowlist: tuple[str, ...]
) -> None:
    """Refuse ``target`` when the allowlist has patterns and none covers one of its libraries
    (above all: a directory above the package, whose paths start with ``vllm/``)."""
    if not allowlist:
        return
    paths = [path.relative_to(target).as_posix() for path in find_compiled_libraries(target)]
    if not paths or any(matches(path, pattern) for path in paths for pattern in allowlist):
        return  # no library at all: audit_directory says so
    package = _package_below(target, paths, allowlist)
    hint = "" if package is None else MSG_HINT.format(package=package)
    count = len(paths)
    ies = "y" if count == 1 else "ies"
    raise AuditError(MSG_WRONG_DIRECTORY.format(target=target, count=count, ies=ies, hint=hint))


def _package_below(target: Path, paths: list[str], allowlist: tuple[str, ...]) -> Path | None:
    """The directory below ``target`` the allowlist's patterns are relative to, if one is."""
    for path in sorted(paths, key=lambda p: (p.count("/"), p)):
        parts = path.split("/")
        for depth in range(1, len(parts)):
            rest = "/".join(parts[depth:])
            if any(matches(rest, pattern) for pattern in allowlist):
                return target.joinpath(*parts[:depth])
    return None
