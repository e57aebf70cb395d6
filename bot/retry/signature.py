"""What a failed CI job failed *on*, in a form two runs can be compared by.

A retry decision asks "did main fail the same way?". Comparing whole logs
never works (timestamps, addresses, durations and temporary paths differ on
every run), so a failure is reduced to a signature:

- ``tests``: the ids pytest lists in its short summary (``FAILED id - ...``,
  ``ERROR id - ...``), sorted and de-duplicated, so their order and repeats
  (several pytest runs in one job) do not matter;
- ``error``: otherwise, the last error-looking line of the log, with the parts
  that change from run to run masked;
- ``none``: nothing recognisable. A ``none`` signature is no evidence and
  matches nothing, not even another ``none``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bot.abi.log import clean_log

SignatureKind = Literal["tests", "error", "none"]
DESCRIBE_NONE = "no failed test or error line found"
DESCRIBE_TESTS = "failed {noun} {shown}{more}"

# Longer error lines are cut: the start says what failed, the rest is detail
# (and a signature has to stay small enough to store and show).
MAX_ERROR_CHARS = 240
# Only the head of a very long line is looked at: a test id starts pytest's
# summary line and an error line says what failed first; this bounds the cost
# on hostile input.
_MAX_SCAN = 4096


@dataclass(frozen=True)
class Signature:
    kind: SignatureKind
    value: tuple[str, ...]

    def matches(self, other: Signature | None) -> bool:
        """The same failure: equal, and actually something (``none`` is no evidence)."""
        return other is not None and self.kind != "none" and self == other

    def describe(self, *, limit: int = 3) -> str:
        """One short line for a comment: the first few test ids, or the error line."""
        if self.kind == "tests":
            shown = ", ".join(self.value[:limit])
            more = len(self.value) - limit
            noun = "test" if len(self.value) == 1 else "tests"
            suffix = f" (+{more} more)" if more > 0 else ""
            return DESCRIBE_TESTS.format(noun=noun, shown=shown, more=suffix)
        if self.kind == "error":
            return self.value[0]
        return DESCRIBE_NONE


NO_SIGNATURE = Signature("none", ())

# `FAILED tests/x.py::TestY::test_z[param-1] - AssertionError: ...` (or ERROR,
# for setup and collection errors). The id is a path ending in .py, then
# optional `::` parts, then an optional parameter list that may itself contain
# spaces; it ends at pytest's " - " separator or the end of the line. vLLM's
# own log lines ("ERROR 05-12 10:11:12 [core.py:42] ...") never have a .py path
# right after the level, so they are not taken for test ids.
_SUMMARY_ID = re.compile(
    r"(?:^|\s)(?:FAILED|ERROR) (?P<id>[\w./-]+\.py(?:::[^\s\[]+)?(?:\[.*?\])?)(?= - |\s*$)"
)

# Lines that say an error happened, but the same words on every failure:
# Buildkite's own verdict and section headers, and pytest's trailer.
_BOILERPLATE = re.compile(
    r"^(?:🚨 )?Error: The command (?:exited with status|was interrupted by a signal)"
    r"|^user command error:"
    r"|^(?:~~~|---|\+\+\+|\^\^\^ \+\+\+)(?: |$)"
    r"|^\$ "  # a command echoed before it runs
    r"|^Traceback \(most recent call last\):"
    r"|^=+ .* =+$"  # pytest's "==== 1 failed, 3 passed in 2.1s ====" banners
)
_ERROR_LINE = re.compile(
    # A Python exception line: `ValueError: ...`, `torch.OutOfMemoryError: ...`,
    # a bare `AssertionError`, possibly after a `[rank0]:` or `E   ` prefix.
    r"(?:^|[\s:(\[])(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)(?::|\s*$)"
    # `error: ...`, `ERROR: ...`, `fatal: ...`, `CMake Error at x.txt:3 (message):`
    r"|\b(?:error|fatal)\b[^:]{0,40}:"
    # `make: *** [all] Error 2`, crashes of the interpreter itself.
    r"|\*\*\* .*\bError \d+"
    r"|Segmentation fault|core dumped|Fatal Python error",
    re.IGNORECASE,
)

# Masks, applied in this order: the specific shapes first, so that the final
# "any number" mask does not leave half of them behind.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Temporary files: pytest's tmp_path, tempfile's names, shared memory.
    (
        re.compile(
            r"(?:/private)?(?:/var)?/tmp/[^\s'\"),\]]*|/dev/shm/[^\s'\"),\]]*|\btmp[a-z0-9_]{8}\b"
        ),
        "<tmp>",
    ),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<id>",
    ),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<hex>"),
    # Commit SHAs, request and object ids: long hex words with a digit and a letter.
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.I), "<hex>"),
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
            r"|\b(?:\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
        ),
        "<time>",
    ),
    (
        re.compile(
            r"\b\d+(?:\.\d+)?\s?(?:ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hours?)\b",
            re.I,
        ),
        "<duration>",
    ),
    (re.compile(r"\brank\d+", re.I), "rankN"),
    # Any other number not glued to a preceding letter: counts, sizes, pids,
    # ports, line numbers. `float16`, `cu129` or `sm90` stay as they are, since
    # those digits name a different thing rather than a different run.
    (re.compile(r"(?<![A-Za-z0-9])\d+(?:\.\d+)?"), "N"),
    (re.compile(r"\s+"), " "),
)


def normalise_error_line(line: str) -> str:
    """``line`` with what changes between runs of the same failure masked."""
    for pattern, replacement in _MASKS:
        line = pattern.sub(replacement, line)
    line = line.strip()
    if len(line) > MAX_ERROR_CHARS:
        line = line[: MAX_ERROR_CHARS - 1] + "…"
    return line


def failed_test_ids(lines: Sequence[str]) -> tuple[str, ...]:
    """The test ids of pytest's summary lines, sorted, each once."""
    found = set()
    for line in lines:
        if "FAILED " not in line and "ERROR " not in line:
            continue
        for match in _SUMMARY_ID.finditer(line[:_MAX_SCAN]):
            found.add(match.group("id"))
    return tuple(sorted(found))


def last_error_line(lines: Sequence[str]) -> str | None:
    """The last line that looks like an error and is not Buildkite's or pytest's boilerplate."""
    for line in reversed(lines):
        text = line.strip()
        if not text or _BOILERPLATE.search(text):
            continue
        if _ERROR_LINE.search(text[:_MAX_SCAN]):
            return text
    return None


def signature_from_lines(lines: Sequence[str]) -> Signature:
    """The signature of an already cleaned log (see ``bot.abi.log.clean_log``)."""
    tests = failed_test_ids(lines)
    if tests:
        return Signature("tests", tests)
    error = last_error_line(lines)
    if error is not None:
        return Signature("error", (normalise_error_line(error[:_MAX_SCAN]),))
    return NO_SIGNATURE


def failure_signature(log_tail: bytes) -> Signature:
    """The signature of a raw Buildkite log tail (timestamps and ANSI codes included)."""
    return signature_from_lines(clean_log(log_tail))
