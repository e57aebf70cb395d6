"""What a failed CI job failed *on*, in a form two runs can be compared by.

A retry decision asks "did main fail the same way?", and red-on-main "did this step
fail the same way twice?". Comparing whole logs never works (timestamps, addresses,
durations and temporary paths differ on every run), so a failure is reduced to a
signature. The first rule that finds something wins:

1. ``tests``: the ids pytest lists in its short summary (``FAILED id - ...``,
   ``ERROR id - ...``), sorted and de-duplicated, so their order and repeats
   (several pytest runs in one job) do not matter;
2. ``audit``: the torch ABI audit's verdict lines (``Not allowed: ...``,
   ``error: failed to inspect '...': ...``), sorted: the script writes them to
   stderr, whose order against stdout is not kept without a TTY;
3. ``error``: one line of a known format, the last one in the command's output:
   a CUDA or NCCL error (``CUDA error: ...``, ``CUDA out of memory``, ``NCCL error``,
   a watchdog timeout), else the exception line that ends the last Python
   traceback, else docker's ``manifest unknown``; failing those, the last
   error-looking line;
4. ``lines``: else the command's own last meaningful lines (at most
   ``MAX_LINES``);
5. ``none``: nothing recognisable. A ``none`` signature is no evidence and
   matches nothing, not even another ``none``.

Rules 3 and 4 read only the *command's output*: the lines before Buildkite's first
verdict (``🚨 Error: The command exited with status 1``), without the agent's own
sections (hooks other than a plugin's command hook, the checkout) unless the job
failed in one, and without section headers, ``$``/``+`` echoed commands, agent
comments and docker's pull progress. Generic lines (an exit status, make's
``*** Error 2``, pytest's banners, a lone "FAILED") are never a signature, nor
part of one: every failure of a step ends with them, so they would make two
unrelated failures look alike. Each line kept is normalised: what changes from
run to run (numbers, hashes, ids, temporary paths, times) is masked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.abi.log import clean_log
from bot.images.missing import image_missing_line

SignatureKind = Literal["tests", "audit", "error", "lines", "none"]
DESCRIBE_NONE = "no failed test, error line or command output found"
DESCRIBE_TESTS = "failed {noun} {shown}{more}"
DESCRIBE_LINES = "last output: {lines}"
# Several lines shown as one (a table cell, a comment's evidence): a visible line break.
LINE_BREAK = " ⏎ "

# Longer error lines are cut: the start says what failed, the rest is detail
# (and a signature has to stay small enough to store and show).
MAX_ERROR_CHARS = 240
# The fallback's lines: the last few say what the command was doing when it
# failed; more would mostly add output that differs between runs.
MAX_LINES = 3
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
        """One short line for a comment: the first few test ids, or the lines."""
        if self.kind == "tests":
            shown = ", ".join(self.value[:limit])
            more = len(self.value) - limit
            noun = "test" if len(self.value) == 1 else "tests"
            suffix = f" (+{more} more)" if more > 0 else ""
            return DESCRIBE_TESTS.format(noun=noun, shown=shown, more=suffix)
        if self.kind == "lines":
            return DESCRIBE_LINES.format(lines=LINE_BREAK.join(self.value))
        if self.kind == "none":
            return DESCRIBE_NONE
        return LINE_BREAK.join(self.value)


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

# The torch ABI audit's verdicts (.buildkite/check-torch-abi.py). They may follow
# a wrapper's prefix on the same line, so they are searched, and kept from there.
_AUDIT_LINE = re.compile(
    r"Not allowed: (?:torch-unstable libraries outside \w+|stale \w+ entries): .*"
    r"|error: failed to inspect '[^']*': .*"
)

# CUDA and NCCL failures name the GPU fault itself; the lines after them (an
# engine that died, a child process that failed) only say that something did.
_CUDA_LINE = re.compile(
    r"CUDA error|CUDA out of memory|CUDA driver error|cudaError\w|CUBLAS_STATUS_|CUDNN_STATUS_"
    r"|NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError"
    r"|Watchdog caught collective operation timeout"
)

_TRACEBACK = "Traceback (most recent call last):"
# The line that ends a traceback: `ValueError: ...`, `torch.OutOfMemoryError: ...`,
# a bare `KeyboardInterrupt`.
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(?::|$)")

_ERROR_LINE = re.compile(
    # A Python exception line: `ValueError: ...`, `torch.OutOfMemoryError: ...`,
    # a bare `AssertionError`, possibly after a `[rank0]:` or `E   ` prefix.
    r"(?:^|[\s:(\[])(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)(?::|\s*$)"
    # `error: ...`, `ERROR: ...`, `fatal: ...`, `CMake Error at x.txt:3 (message):`
    r"|\b(?:error|fatal)\b[^:]{0,40}:"
    # Crashes of the interpreter itself.
    r"|Segmentation fault|core dumped|Fatal Python error",
    re.IGNORECASE,
)

# Where Buildkite's verdict on the job starts: what the job printed is above it,
# the agent's own epilogue (pre-exit hooks, "user command error") below.
_VERDICT = re.compile(
    r"^(?:🚨 )?Error: The .*(?:exited with status -?\d+|was interrupted by a signal)"
)
# A section header starts a new collapsible section of the log.
_HEADER = re.compile(r"^(?:~~~|---|\+\+\+)(?: |$)")
# The agent's own sections: hooks (but a plugin's *command* hook runs the command:
# the docker plugin's does), the checkout, the plugins' set-up.
_AGENT_SECTION = re.compile(
    r"^~~~ (?:Running .*(?<![\w-])(?!command hook)[\w-]+ hook\b"
    r"|Preparing working directory|Setting up plugins)"
)

# Lines that are never the command's own output, whatever the command: the agent's
# and the docker plugin's lines around it.
_NOISE = re.compile(
    r"^(?:~~~|---|\+\+\+)(?: |$)"  # section headers
    r"|^\^\^\^ \+\+\+$"  # "expand the section above"
    r"|^\$ "  # a command echoed by the agent or a plugin before it runs
    r"|^\++ "  # a command echoed by `set -x` (one + per level of nesting)
    r"|^# "  # the agent's comments: `# Executing "..."`, `# Received cancellation signal`
    r"|^:docker: "
    r"|^Unable to find image '[^']*' locally$"
    r"|^\S+: Pulling from \S+$"
    r"|^[0-9a-f]{12}: (?:Pulling fs layer|Waiting|Verifying Checksum|Download complete"
    r"|Pull complete|Already exists|Downloading|Extracting)"
    r"|^Digest: sha256:"
    r"|^Status: (?:Downloaded newer image|Image is up to date) for "
)

# Lines that say a failure happened, in the same words on every failure of a step:
# as (part of) a signature they would make two unrelated failures look alike.
_GENERIC = re.compile(
    # Any line that ends by giving an exit status: Buildkite's "The command exited with
    # status 1", "user command error: exit status 1", "Exited with status 1",
    # CalledProcessError's "returned non-zero exit status 1." (but not an HTTP
    # client's "failed with status code 500": that names a cause).
    r"\bexit(?:ed)?\b.{0,20}?\b(?:status|code)[ :=]*-?\d+\.?$"
    r"|^(?:🚨 )?Error: The .* was interrupted by a signal"
    # `make: *** [Makefile:12: test] Error 2` names the step's own target, no cause.
    r"|^make(?:\[\d+\])?: \*\*\* .*\bError -?\d+(?: \(ignored\))?$"
    # torchrun's wrapper: a child failed; its own error is the cause.
    r"|^(?:[\w.]+\.)?ChildFailedError:?$"
    r"|^Traceback \(most recent call last\):$"
    r"|^=+ .* =+$"  # pytest's "==== 1 failed, 3 passed in 2.1s ====" banners
    r"|^[-=_*#~.+]{3,}$"  # rules between blocks of output
    # A lone verdict word, maybe after a program's name: "FAILED", "ninja: build
    # stopped: subcommand failed."
    r"|^(?:[\w./-]+: )*(?:error|fatal|failed|failure|aborted|build stopped: subcommand failed)"
    r"[.!:]*$",
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
    # glog's and c10's line prefix, `E0512 10:41:09.882000` or `[E512 10:41:07.12]`: the
    # month and day are glued to the level letter, which stays.
    (re.compile(r"(?<=\b[EWIF])\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d+)?"), "<time>"),
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T _]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
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
    # ports, line numbers. `float16`, `cu129`, `sm90` or `_C_AVX512.abi3.so` stay
    # as they are, since those digits name a different thing rather than a
    # different run.
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


def is_generic(line: str) -> bool:
    """Whether ``line`` says only that something failed (see ``_GENERIC``)."""
    text = line.strip()[:_MAX_SCAN]
    return not text or _GENERIC.search(text) is not None


def _is_noise(line: str) -> bool:
    text = line.strip()[:_MAX_SCAN]
    return not text or _NOISE.search(text) is not None


def failed_test_ids(lines: Sequence[str]) -> tuple[str, ...]:
    """The test ids of pytest's summary lines, sorted, each once."""
    found = set()
    for line in lines:
        if "FAILED " not in line and "ERROR " not in line:
            continue
        for match in _SUMMARY_ID.finditer(line[:_MAX_SCAN]):
            found.add(match.group("id"))
    return tuple(sorted(found))


def audit_lines(lines: Sequence[str]) -> tuple[str, ...]:
    """The torch ABI audit's verdict lines, normalised, sorted, each once."""
    found = set()
    for line in lines:
        match = _AUDIT_LINE.search(line[:_MAX_SCAN])
        if match is not None:
            found.add(normalise_error_line(match.group()))
    return tuple(sorted(found))


def command_output(lines: Sequence[str]) -> list[str]:
    """The lines the failed command printed: those before Buildkite's first verdict,
    outside the agent's own sections (but the last section is kept: a hook that failed
    is where the job failed), without noise."""
    end = next(
        (i for i, line in enumerate(lines) if _VERDICT.match(line.strip()[:_MAX_SCAN])), len(lines)
    )
    sections: list[tuple[bool, list[str]]] = [(False, [])]
    for line in lines[:end]:
        text = line.strip()[:_MAX_SCAN]
        if _HEADER.match(text):
            sections.append((_AGENT_SECTION.match(text) is not None, []))
        elif not _is_noise(text):
            sections[-1][1].append(line)
    last = len(sections) - 1
    return [
        line
        for index, (agent, body) in enumerate(sections)
        if not agent or index == last
        for line in body
    ]


def _last(lines: Sequence[str], found: Callable[[str], bool]) -> str | None:
    return next((line for line in reversed(lines) if found(line[:_MAX_SCAN])), None)


def cuda_error_line(lines: Sequence[str]) -> str | None:
    """The last line naming a CUDA or NCCL failure."""
    return _last(lines, lambda line: _CUDA_LINE.search(line) is not None)


def traceback_exception(lines: Sequence[str]) -> str | None:
    """The exception line that ends the last Python traceback, unless it is generic.

    A traceback's lines may all carry one prefix (``[rank0]: ``, ``(EngineCore pid=7) ``):
    it is taken from the ``Traceback`` line, and lines without it belong to another
    process writing at the same time.
    """
    start = next((i for i in reversed(range(len(lines))) if _TRACEBACK in lines[i]), None)
    if start is None:
        return None
    prefix = lines[start][: lines[start].index(_TRACEBACK)]
    for line in lines[start + 1 :]:
        body = line[len(prefix) :]
        if not line.startswith(prefix) or not body.strip() or body[0].isspace():
            continue  # another process's line, or a frame: its file, code or carets
        if _EXCEPTION.match(body) is None or is_generic(body):
            return None
        return body
    return None


def known_error_line(lines: Sequence[str]) -> str | None:
    """A line of a known failure format: CUDA/NCCL, a traceback's end, a missing image."""
    return cuda_error_line(lines) or traceback_exception(lines) or image_missing_line(lines)


def last_error_line(lines: Sequence[str]) -> str | None:
    """The last line that looks like an error and is neither noise nor generic."""
    for line in reversed(lines):
        if _is_noise(line) or is_generic(line):
            continue
        if _ERROR_LINE.search(line.strip()[:_MAX_SCAN]):
            return line.strip()
    return None


def last_lines(lines: Sequence[str]) -> tuple[str, ...]:
    """The last ``MAX_LINES`` lines that are neither noise nor generic, normalised."""
    kept: list[str] = []
    for line in reversed(lines):
        if len(kept) == MAX_LINES:
            break
        if not _is_noise(line) and not is_generic(line):
            kept.append(normalise_error_line(line[:_MAX_SCAN]))
    return tuple(reversed(kept))


def _error(line: str) -> Signature:
    return Signature("error", (normalise_error_line(line[:_MAX_SCAN]),))


def signature_from_lines(lines: Sequence[str]) -> Signature:
    """The signature of an already cleaned log (see ``bot.abi.log.clean_log``)."""
    tests = failed_test_ids(lines)
    if tests:
        return Signature("tests", tests)
    audit = audit_lines(lines)
    if audit:
        return Signature("audit", audit)
    output = command_output(lines)
    error = known_error_line(output) or last_error_line(output)
    if error is not None:
        return _error(error)
    tail = last_lines(output)
    return Signature("lines", tail) if tail else NO_SIGNATURE


def failure_signature(log_tail: bytes) -> Signature:
    """The signature of a raw Buildkite log tail (timestamps and ANSI codes included)."""
    return signature_from_lines(clean_log(log_tail))
