"""Main-branch history of a step: attempts that never ran say nothing about it."""

from __future__ import annotations

from typing import Any, cast

from bot.buildkite.client import BuildkiteClient
from bot.failures.history import History

STEP = "kernels-test"
STARTED = "2025-05-12T10:00:00.000Z"
ERROR = b"FAILED tests/kernels/test_moe.py::test_moe - AssertionError: mismatch\r\n"


class Logs:
    """Just enough of BuildkiteClient: the log tail of each main job, and who was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def job_log_tail(self, org: str, pipeline: str, number: int, job_id: str) -> bytes:
        self.asked.append(job_id)
        return ERROR


def attempt(
    job_id: str, state: str, *, retries: int = 0, started: bool = True, step: str = STEP
) -> dict[str, Any]:
    return {
        "id": job_id,
        "type": "script",
        "step_key": step,
        "state": state,
        "retries_count": retries or None,
        "created_at": f"2025-05-12T10:{retries:02d}:00.000Z",
        "started_at": STARTED if started else None,
    }


def build(number: int, *jobs: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": number,
        "web_url": f"https://buildkite.example/vllm/ci/builds/{number}",
        "commit": f"{number:040x}",
        "finished_at": f"2025-05-12T{number:02d}:00:00.000Z",
        "jobs": list(jobs),
    }


def history(*builds: dict[str, Any]) -> tuple[History, Logs]:
    logs = Logs()
    return History("vllm", "ci", list(builds), cast(BuildkiteClient, logs), {}), logs


def test_a_build_whose_step_never_ran_is_no_run_of_the_step() -> None:
    found, _ = history(
        build(9, attempt("b", "broken", started=False)),
        build(8, attempt("s", "skipped", started=False)),
        build(7, attempt("c", "canceled", started=False)),
        build(6, attempt("w", "waiting_failed", started=False)),
        build(5, attempt("e", "expired", started=False)),
        build(4, attempt("f", "failed")),
    )
    [run] = found.runs(STEP, since=0)
    assert run.build_number == 4
    assert not run.passed


def test_an_attempt_that_never_ran_is_neither_a_failure_nor_a_retry() -> None:
    found, _ = history(
        # expired, then passed on retry: the step passed first time it ran
        build(3, attempt("e", "expired", started=False), attempt("p", "passed", retries=1)),
        # failed, then its retry was canceled before it started: still a failure
        build(2, attempt("f", "failed"), attempt("c", "canceled", retries=1, started=False)),
    )
    newer, older = found.runs(STEP, since=0)
    assert newer.passed
    assert not newer.passed_on_retry
    assert not older.passed
    assert not older.passed_on_retry


def test_a_job_that_ran_still_counts() -> None:
    found, _ = history(
        build(4, attempt("f", "failed"), attempt("p", "passed", retries=1)),
        build(2, attempt("t", "timed_out")),
        build(1, attempt("other", "failed", step="other")),
    )
    runs = found.runs(STEP, since=0)
    assert [run.build_number for run in runs] == [4, 2]
    assert runs[0].passed_on_retry
    assert not runs[1].passed


def test_a_job_canceled_while_it_ran_is_no_run_of_the_step() -> None:
    # Someone stopped it: it did not fail, and its log stops wherever the cancel caught it.
    found, _ = history(
        build(3, attempt("c", "canceled", started=True)),
        build(2, attempt("f", "failed"), attempt("c2", "canceled", retries=1, started=True)),
        build(1, attempt("p", "passed")),
    )
    runs = found.runs(STEP, since=0)
    assert [(run.build_number, run.passed, run.passed_on_retry) for run in runs] == [
        (2, False, False),
        (1, True, False),
    ]


async def test_signatures_are_read_from_the_attempt_that_ran() -> None:
    found, logs = history(
        build(2, attempt("b", "broken", started=False)),
        build(1, attempt("e", "expired", started=False), attempt("f", "failed", retries=1)),
    )
    [run] = await found.with_signatures(STEP, found.runs(STEP, since=0))
    assert run.build_number == 1
    assert logs.asked == ["f"]  # never the jobs that have no log
    assert run.signature is not None
    assert run.signature.kind != "none"


def shard(job: dict[str, Any], index: int, total: int = 2) -> dict[str, Any]:
    return {**job, "parallel_group_index": index, "parallel_group_total": total}


def test_shards_are_compared_shard_with_shard() -> None:
    found, _ = history(
        # shard 0 failed, shard 1 passed: no "passed on retry" for either
        build(2, shard(attempt("a", "failed"), 0), shard(attempt("b", "passed"), 1)),
        # shard 0 failed, then its own retry passed: flaky on main
        build(
            1,
            shard(attempt("c", "failed"), 0),
            shard(attempt("d", "passed", retries=1), 0),
            shard(attempt("e", "passed"), 1),
        ),
    )
    newer, older = found.runs(STEP, since=0, shard=0)
    assert not newer.passed
    assert not newer.passed_on_retry
    assert older.passed
    assert older.passed_on_retry
    assert [run.passed for run in found.runs(STEP, since=0, shard=1)] == [True, True]
    assert found.runs(STEP, since=0) == []  # an unsharded step of that key never ran
