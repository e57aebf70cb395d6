"""Laws of the signature of any failing command, on generated vLLM-shaped job logs."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from bot.failures.signature import (
    MAX_ERROR_CHARS,
    MAX_LINES,
    NO_SIGNATURE,
    failure_signature,
)

from .vllm_logs import AUDIT_OUTSIDE, AUDIT_STALE, AUDIT_STDOUT, Build, job_lines, job_log

_HEX = "0123456789abcdef"
_COLOURS = st.sampled_from(["", "\x1b[31m", "\x1b[1;31m", "\x1b[90m", "\x1b[38;5;196m"])

# What a command may print, one of each kind of signature (no pytest summary: its
# ids are not masked, and its own laws are in test_flaky_properties.py). `{n}` is a
# number that differs from run to run.
_OUTPUT = [
    "Comparing requirements/test.txt with a fresh compile ({n} packages)",
    "requirements/test.txt differs from the compiled lock",
    "waiting for the server on port {n}",
    "RuntimeError: CUDA error: an illegal memory access was encountered (pid {n})",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {n}.00 MiB",
    "OSError: [Errno 28] No space left on device: '/tmp/tmp{n}abcdefgh/x'",
    "error: could not find the wheel after {n}s",
    AUDIT_STDOUT,
    AUDIT_OUTSIDE,
    AUDIT_STALE,
]
# Lines every failure of a step may end with: they say nothing of which failure.
_GENERIC = [
    "make: *** [Makefile:{n}: test] Error 2",
    "Error: Process completed with exit code {n}.",
    "user command error: exit status {n}",
    "Exited with status {n}",
    "FAILED",
    "========== {n} failed in {n}.5s ==========",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
]
# Buildkite's verdict: generic too, and where the command's output ends.
_VERDICTS = ["🚨 Error: The command exited with status {n}"]
# The frame's and tools' lines that are never the command's own words.
_NOISE = ["+ bash run.sh {n}", "$ docker run --rm image:{n}", "", "# Executing hook {n}"]


@st.composite
def builds(draw: st.DrawFn) -> Build:
    hex_text = st.text(alphabet=_HEX, min_size=40, max_size=40)
    commit = draw(hex_text.filter(lambda h: any(c.isalpha() for c in h)))
    job = draw(st.uuids()).hex
    job_id = f"{job[:8]}-{job[8:12]}-{job[12:16]}-{job[16:20]}-{job[20:]}"
    agent = f"bk-gpu-queue-ci-i-{draw(st.integers(0, 10**12))}"
    return Build(job_id, commit, agent, draw(st.integers(10**12, 2 * 10**12)))


def _filled(templates: list[str], numbers: list[int]) -> list[str]:
    return [t.format(n=numbers[i % len(numbers)]) for i, t in enumerate(templates)]


def _decorated(lines: list[str], stamps: list[int], colours: list[str]) -> bytes:
    out = []
    for index, line in enumerate(lines):
        colour = colours[index % len(colours)] if colours else ""
        text = f"{colour}{line}\x1b[0m" if colour else line
        out.append(f"\x1b_bk;t={stamps[index % len(stamps)]}\x07{text}\r\n")
    return "".join(out).encode()


_TEMPLATES = st.lists(st.sampled_from(_OUTPUT), min_size=1, max_size=6)
_NUMBERS = st.lists(st.integers(0, 10**9), min_size=1, max_size=4)


@given(templates=_TEMPLATES, first=_NUMBERS, second=_NUMBERS, a=builds(), b=builds())
def test_the_same_failure_in_two_builds_has_the_same_signature(
    templates: list[str], first: list[int], second: list[int], a: Build, b: Build
) -> None:
    """Job ids, commits, agents, times and the numbers in the output are masked."""
    one = failure_signature(job_log(_filled(templates, first), a))
    other = failure_signature(job_log(_filled(templates, second), b))
    assert one == other
    assert one.matches(other)


@given(
    templates=_TEMPLATES,
    numbers=_NUMBERS,
    stamps=st.lists(st.integers(0, 2**45), min_size=1, max_size=5),
    colours=st.lists(_COLOURS, max_size=4),
)
def test_markers_colours_and_line_endings_do_not_change_the_signature(
    templates: list[str], numbers: list[int], stamps: list[int], colours: list[str]
) -> None:
    lines = job_lines(_filled(templates, numbers))
    plain = failure_signature("\n".join(lines).encode())
    assert failure_signature(_decorated(lines, stamps, colours)) == plain


@given(
    generic=st.lists(st.sampled_from(_GENERIC + _VERDICTS + _NOISE), max_size=8),
    numbers=_NUMBERS,
    build=builds(),
)
def test_output_of_generic_lines_only_has_no_signature(
    generic: list[str], numbers: list[int], build: Build
) -> None:
    """Two unrelated failures that print only what every failure prints never match."""
    assert failure_signature(job_log(_filled(generic, numbers), build)) == NO_SIGNATURE


@given(
    templates=_TEMPLATES,
    generic=st.lists(st.sampled_from(_GENERIC + _NOISE), min_size=1, max_size=6),
    numbers=_NUMBERS,
    order=st.randoms(use_true_random=False),
)
def test_generic_and_noise_lines_add_nothing(
    templates: list[str], generic: list[str], numbers: list[int], order: random.Random
) -> None:
    """Inserted anywhere before the verdict (which ends the output: it moves the end)."""
    output = _filled(templates, numbers)
    mixed = list(output)
    for line in _filled(generic, numbers):
        mixed.insert(order.randint(0, len(mixed)), line)
    assert failure_signature(job_log(mixed)) == failure_signature(job_log(output))


@given(lines=st.lists(st.text(max_size=6000), max_size=12))
def test_a_signature_stays_small_whatever_the_output(lines: list[str]) -> None:
    signature = failure_signature(job_log(lines))
    if signature.kind == "lines":
        assert len(signature.value) <= MAX_LINES
    if signature.kind != "tests":
        assert all(len(line) <= MAX_ERROR_CHARS for line in signature.value)
