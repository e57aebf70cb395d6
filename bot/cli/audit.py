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
from bot.edit.allowlist import AllowlistError, read_allowlist

EXIT_ERROR = 2

HEADER = ">>> Auditing vLLM extension modules for PyTorch stable ABI compliance"
PASSED = "Torch stable ABI check passed."
MSG_ERROR = "error: {reason}"
MSG_UNREADABLE = "{file}: cannot read the allowlist: {reason}"
WHEEL_SUFFIX = ".whl"


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
        return audit_directory(target, allowlist, variable=variable)
    if target.is_file() and target.name.endswith(WHEEL_SUFFIX):
        with tempfile.TemporaryDirectory(prefix="followup-bot-audit-") as workdir:
            return audit_wheel(target, allowlist, workdir=Path(workdir), variable=variable)
    raise AuditError(MSG_NOT_WHEEL_OR_DIR.format(target=target))
