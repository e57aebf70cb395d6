"""Evidence from a torch ABI audit job's log.

vLLM's check prints at most two ``Not allowed: ...`` lines to stderr, or
``Torch stable ABI check passed.`` to stdout; without a TTY the order of the
two streams is not guaranteed, and Buildkite's raw log prefixes lines with
``ESC _bk;t=<ms> BEL`` timestamps and keeps ANSI colours. So the parser strips
those, looks at every line, and assumes no order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_VARIABLE = "ALLOWED_UNSTABLE_LIBRARIES"
PASSED = "Torch stable ABI check passed."

# Buildkite's timestamp marker is an APC sequence: ESC _ bk;t=<ms> BEL.
_BK_TIMESTAMP = re.compile(r"\x1b_bk;t=\d+\x07")
# CSI (colours, cursor moves) and OSC sequences, and stray carriage returns.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


@dataclass(frozen=True)
class AuditEvidence:
    """What one audit run said, with the exact lines it said it in."""

    passed: bool
    outside: tuple[str, ...]  # unstable libraries no allowlist entry covers
    stale: tuple[str, ...]  # allowlist patterns that matched a non-unstable library
    inspection_error: str | None
    lines: tuple[str, ...]  # the verdict lines, cleaned, as printed

    @property
    def found(self) -> bool:
        """Whether the log contained any verdict at all (a truncated log may not)."""
        return bool(self.lines)


def clean_log(raw: bytes) -> list[str]:
    """The log's text lines without Buildkite timestamps, ANSI codes or CRs."""
    text = raw.decode("utf-8", errors="replace")
    text = _BK_TIMESTAMP.sub("", text)
    text = _ANSI.sub("", text)
    lines = []
    for line in text.split("\n"):
        # A progress bar redraws with \r: the last segment is what stayed on
        # screen (after dropping the \r of a CRLF line ending).
        lines.append(line.rstrip("\r").rsplit("\r", 1)[-1].rstrip())
    return lines


def parse_audit_log(raw: bytes, *, variable: str = DEFAULT_VARIABLE) -> AuditEvidence:
    outside_prefix = f"Not allowed: torch-unstable libraries outside {variable}: "
    stale_prefix = f"Not allowed: stale {variable} entries: "
    outside: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    error: str | None = None
    passed = False
    verdicts: list[str] = []
    for line in clean_log(raw):
        # The verdict may follow other text on the same line (a prefix added by
        # a wrapper script), so search rather than match at the start.
        if (at := line.find(outside_prefix)) >= 0:
            outside = _split(line[at + len(outside_prefix) :])
            verdicts.append(line[at:])
        elif (at := line.find(stale_prefix)) >= 0:
            stale = _split(line[at + len(stale_prefix) :])
            verdicts.append(line[at:])
        elif (at := line.find("error: failed to inspect ")) >= 0:
            error = line[at:]
            verdicts.append(error)
        elif line.endswith(PASSED):
            passed = True
            verdicts.append(PASSED)
    failed = bool(outside or stale or error)
    return AuditEvidence(
        passed=passed and not failed,
        outside=outside,
        stale=stale,
        inspection_error=error,
        lines=tuple(dict.fromkeys(verdicts)),
    )


def _split(listing: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in listing.split(", ") if item.strip())
