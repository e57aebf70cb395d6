"""Logs for the classifier tests: the hand-written ones under logs/, and a builder."""

from __future__ import annotations

from pathlib import Path

from bot.failures.classify import Failure, MainRun
from bot.failures.signature import Signature

LOGS = Path(__file__).parent / "logs"
PR_COMMIT = "3f9c2a7e41d05b8c6a1f0e2d9b7c4a5e6f708192"


def log(name: str) -> bytes:
    """A raw Buildkite log from logs/ (timestamp markers, ANSI colours, CRLF)."""
    return (LOGS / f"{name}.log").read_bytes()


def bk(lines: list[str], *, start_ms: int = 1_747_044_000_000, colour: str = "") -> bytes:
    """Lines as Buildkite writes them: a timestamp marker before each, CRLF endings."""
    end = "\x1b[0m" if colour else ""
    return "".join(
        f"\x1b_bk;t={start_ms + 41 * i}\x07{colour}{line}{end}\r\n" for i, line in enumerate(lines)
    ).encode()


def failure(
    log_tail: bytes | None,
    *,
    step_key: str | None = "kernels-test",
    name: str = ":pytorch: Kernels Test",
    state: str = "failed",
    exit_status: int | None = 1,
    signal_reason: str | None = None,
) -> Failure:
    return Failure(
        job_id="01965c2e-0000-4000-8000-000000000001",
        step_key=step_key,
        name=name,
        state=state,
        exit_status=exit_status,
        signal_reason=signal_reason,
        web_url="https://buildkite.example/vllm/ci/builds/9001#01965c2e",
        log_tail=log_tail,
    )


def main_run(
    number: int,
    *,
    passed: bool,
    signature: Signature | None = None,
    passed_on_retry: bool = False,
    commit: str | None = None,
) -> MainRun:
    """A main build's run of the step; a higher number finished later."""
    return MainRun(
        build_number=number,
        build_url=f"https://buildkite.example/vllm/ci/builds/{number}",
        commit=commit or f"{number:040x}",
        finished_at=1_747_000_000.0 + number * 600,
        passed=passed,
        signature=signature,
        passed_on_retry=passed_on_retry,
    )
