"""Whether a step is broken on main: its runs across main builds, and the judgement."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.failures.signature import NO_SIGNATURE, Signature
from bot.main_red.signals import (
    MAX_JUDGED_RUNS,
    REASON_BROKEN,
    REASON_DIFFERENT,
    REASON_GREEN,
    REASON_GREEN_ON_RETRY,
    REASON_INFRA,
    REASON_LOG_NOT_READ,
    REASON_NO_GREEN,
    REASON_NO_RUNS,
    REASON_NO_SIGNATURE,
    REASON_RED,
    RunEvidence,
    SignalState,
    StepId,
    StepRun,
    first_red,
    judge,
    last_episode,
    last_green,
    red_streak,
    runs_to_read,
    timelines,
)

AUDIT = StepId("torch-stable-abi-audit")
ABI = Signature("error", ("AssertionError: _C_AVX2.abi3.so is not allowlisted",))
OTHER = Signature("tests", ("tests/test_x.py::test_y",))


def job(
    key: str | None,
    state: str,
    *,
    id: str = "j",
    retries: int | None = 0,
    shard: object = None,
    **extra: Any,
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": id,
        "step_key": key,
        "state": state,
        "retries_count": retries,
        "parallel_group_index": shard,
        "created_at": f"2026-08-01T00:00:0{retries}Z",
        "web_url": f"https://bk/job/{id}",
    }
    found.update(extra)
    return found


def build(number: int, *jobs: dict[str, Any], state: str = "failed") -> dict[str, Any]:
    return {
        "number": number,
        "web_url": f"https://bk/builds/{number}",
        "commit": f"c{number}",
        "state": state,
        "finished_at": "2026-08-01T00:00:00Z",
        "jobs": list(jobs),
    }


def run(number: int, *, passed: bool, on_retry: bool = False) -> StepRun:
    return StepRun(
        build_number=number,
        build_url=f"https://bk/builds/{number}",
        commit=f"c{number}",
        passed=passed,
        job_id=f"j{number}",
        job_url=f"https://bk/job/j{number}",
        exit_status=None if passed else 1,
        signal_reason=None,
        state="passed" if passed else "failed",
        passed_on_retry=on_retry,
    )


def red(*numbers: int) -> list[StepRun]:
    return [run(n, passed=False) for n in numbers]


def same(*runs: StepRun, signature: Signature = ABI) -> dict[str, RunEvidence]:
    return {r.job_id: RunEvidence(signature) for r in runs}


# --- StepId ------------------------------------------------------------------------


def test_a_step_shows_its_key_and_a_shard_one_based() -> None:
    assert str(StepId("lora")) == "lora"
    assert str(StepId("lora", 0)) == "lora #1"
    assert str(StepId("lora", 3)) == "lora #4"


# --- timelines ---------------------------------------------------------------------


def test_incident_a_timeline_newest_first() -> None:
    builds = [
        build(86250, job("torch-stable-abi-audit", "failed", id="e", exit_status=1)),
        build(86246, job("torch-stable-abi-audit", "failed", id="d", exit_status=1)),
        build(
            86222, job("torch-stable-abi-audit", "passed", id="a", exit_status=0), state="passed"
        ),
    ]
    runs = timelines(builds)[AUDIT]
    assert [r.build_number for r in runs] == [86250, 86246, 86222]
    assert [r.passed for r in runs] == [False, False, True]
    newest = runs[0]
    assert newest.job_id == "e"
    assert newest.job_url == "https://bk/job/e"
    assert newest.build_url == "https://bk/builds/86250"
    assert newest.commit == "c86250"
    assert newest.exit_status == 1
    assert newest.state == "failed"
    assert newest.signal_reason is None
    assert not newest.passed_on_retry


def test_unfinished_unnumbered_and_repeated_builds_are_ignored_and_order_is_by_number() -> None:
    builds = [
        build(3, job("s", "passed", id="three"), state="passed"),
        build(5, job("s", "failed", id="five")),
        build(4, job("s", "passed"), state="running"),
        build(5, job("s", "passed", id="five-again"), state="passed"),
        {"number": "6", "state": "failed", "jobs": [job("s", "failed")]},
        {"number": True, "state": "failed", "jobs": [job("s", "failed")]},
        {"number": 7, "state": "passed"},  # no jobs listed
    ]
    runs = timelines(builds)[StepId("s")]
    assert [(r.build_number, r.job_id) for r in runs] == [(5, "five"), (3, "three")]


def test_build_fields_missing_read_as_empty() -> None:
    listed = {"number": 1, "state": "passed", "jobs": [{"step_key": "s", "state": "passed"}]}
    (only,) = timelines([listed])[StepId("s")]
    assert (only.build_url, only.commit, only.job_id, only.job_url) == ("", "", "", "")


def test_attempts_that_never_ran_are_ignored_and_a_skipped_build_has_no_run() -> None:
    builds = [
        build(
            3,
            job("s", "failed", id="ran", retries=0),
            job("s", "broken", id="broken", retries=1),
            job("s", "canceled", id="never-started", retries=2),
        ),
        build(2, job("s", "skipped"), job("s", "expired"), job("s", "running")),
        build(1, job("s", "failed", id="one")),
    ]
    runs = timelines(builds)[StepId("s")]
    assert [(r.build_number, r.job_id, r.passed) for r in runs] == [
        (3, "ran", False),
        (1, "one", False),
    ]
    assert red_streak(runs) == runs  # the skipped build 2 neither breaks nor ends it


STOPPED = "2026-08-01T00:00:00Z"


def test_a_job_canceled_while_it_ran_is_no_run_and_no_red_signal() -> None:
    # Someone stopped the step twice in a row after a green run: no failure of the code,
    # so no red run, let alone a broken step.
    builds = [
        build(3, job("s", "canceled", id="c3", started_at=STOPPED, exit_status=-1)),
        build(2, job("s", "canceled", id="c2", started_at=STOPPED, signal_reason="cancel")),
        build(1, job("s", "passed", id="green")),
    ]
    runs = timelines(builds)[StepId("s")]
    assert [(r.build_number, r.job_id, r.passed) for r in runs] == [(1, "green", True)]
    assert red_streak(runs) == ()
    assert judge(StepId("s"), runs, {}).state is SignalState.GREEN
    # A build whose only canceled step is that one: the step has no run there at all.
    assert StepId("t") not in timelines([build(4, job("t", "canceled", started_at=STOPPED))])


def test_a_canceled_build_between_two_red_ones_neither_breaks_nor_ends_the_streak() -> None:
    builds = [
        build(4, job("s", "failed", id="f4")),
        build(3, job("s", "canceled", id="c3", started_at=STOPPED)),
        build(2, job("s", "failed", id="f2")),
        build(1, job("s", "passed", id="green")),
    ]
    runs = timelines(builds)[StepId("s")]
    assert [r.job_id for r in red_streak(runs)] == ["f4", "f2"]
    evidence = {"f4": RunEvidence(ABI), "f2": RunEvidence(ABI)}
    assert judge(StepId("s"), runs, evidence).state is SignalState.BROKEN


def test_a_retry_canceled_while_it_ran_leaves_the_first_failure_judged() -> None:
    listed = build(
        1,
        job("s", "failed", id="first", retries=0),
        job("s", "canceled", id="retry", retries=1, started_at=STOPPED),
    )
    (only,) = timelines([listed])[StepId("s")]
    assert (only.passed, only.job_id, only.passed_on_retry) == (False, "first", False)


def test_a_soft_failure_is_no_run_of_the_step() -> None:
    # `soft_fail: true` steps fail without failing main's build: never a red signal.
    builds = [
        build(3, job("s", "failed", id="soft3", soft_failed=True)),
        build(2, job("s", "failed", id="soft2", soft_failed=True)),
        build(1, job("s", "passed", id="green")),
    ]
    runs = timelines(builds)[StepId("s")]
    assert [(r.build_number, r.passed) for r in runs] == [(1, True)]
    assert red_streak(runs) == ()


def test_jobs_without_a_step_key_or_not_scripts_are_not_steps() -> None:
    listed = build(
        1,
        job(None, "failed"),
        job("", "failed"),
        job("block", "passed", type="manual"),
        job("s", "passed", type="script"),
    )
    assert list(timelines([listed])) == [StepId("s")]


def test_the_latest_attempt_decides_and_the_first_failed_attempt_is_judged() -> None:
    listed = build(
        1,
        job("s", "passed", id="retry", retries=1, exit_status=0),
        job("s", "failed", id="first", retries=0, exit_status=-1, signal_reason="agent_stop"),
    )
    (only,) = timelines([listed])[StepId("s")]
    assert only.passed
    assert only.passed_on_retry
    assert (only.job_id, only.exit_status, only.signal_reason, only.state) == (
        "first",
        -1,
        "agent_stop",
        "failed",
    )


def test_a_retry_that_failed_again_keeps_the_first_failure() -> None:
    listed = build(
        1,
        job("s", "timed_out", id="first", retries=0),
        job("s", "failed", id="second", retries=1),
    )
    (only,) = timelines([listed])[StepId("s")]
    assert not only.passed
    assert not only.passed_on_retry
    assert (only.job_id, only.state) == ("first", "timed_out")


def test_odd_exit_statuses_and_signal_reasons_read_as_none() -> None:
    listed = build(1, job("s", "failed", exit_status=True, signal_reason=7, retries=None))
    (only,) = timelines([listed])[StepId("s")]
    assert only.exit_status is None
    assert only.signal_reason is None


def test_shards_are_steps_of_their_own() -> None:
    listed = build(
        1,
        job("lora", "failed", id="a", shard=0),
        job("lora", "passed", id="b", shard=1),
        job("lora", "passed", id="c", shard="x"),
    )
    found = timelines([listed])
    assert found[StepId("lora", 0)][0].job_id == "a"
    assert found[StepId("lora", 1)][0].job_id == "b"
    assert found[StepId("lora")][0].job_id == "c"


# --- streaks -----------------------------------------------------------------------


def test_streak_last_green_and_runs_to_read() -> None:
    runs = [*red(9, 8, 7, 6), run(5, passed=True), *red(4)]
    assert [r.build_number for r in red_streak(runs)] == [9, 8, 7, 6]
    green = last_green(runs)
    assert green is not None
    assert green.build_number == 5
    assert [r.build_number for r in runs_to_read(runs)] == [9, 8, 7][:MAX_JUDGED_RUNS]


def test_no_streak_when_the_newest_passed_and_no_green_when_all_failed() -> None:
    runs = [run(2, passed=True), *red(1)]
    assert red_streak(runs) == ()
    assert last_green(runs) == runs[0]
    assert last_green(red(2, 1)) is None
    assert last_green([]) is None


def test_the_last_episode_starts_at_the_newest_failed_run() -> None:
    green_again = [run(9, passed=True), run(8, passed=True), *red(7, 6), run(5, passed=True)]
    assert [r.build_number for r in last_episode(green_again)] == [7, 6, 5]
    # A step red now: its episode is all of its runs; one never red has none.
    red_now = [*red(3, 2), run(1, passed=True)]
    assert last_episode(red_now) == tuple(red_now)
    assert last_episode([run(2, passed=True), run(1, passed=True)]) == ()
    assert last_episode([]) == ()


@given(st.lists(st.booleans(), max_size=12))
def test_streak_and_last_green_split_the_history(outcomes: list[bool]) -> None:
    runs = [run(100 - i, passed=p) for i, p in enumerate(outcomes)]
    streak = red_streak(runs)
    assert all(not r.passed for r in streak)
    assert tuple(runs[: len(streak)]) == streak
    green = last_green(runs)
    if green is None:
        assert len(streak) == len(runs)
    else:
        assert green.passed
        assert green is runs[len(streak)]
    assert runs_to_read(runs) == streak[:MAX_JUDGED_RUNS]


# --- judge -------------------------------------------------------------------------


def test_incident_a_is_broken() -> None:
    runs = [*red(86250, 86246, 86228, 86224, 86214), run(86222, passed=True)]
    signal = judge(AUDIT, runs, same(*runs_to_read(runs)))
    assert signal.state is SignalState.BROKEN
    assert signal.reason == REASON_BROKEN.format(
        count=5, first=86214, green=86222, signature=ABI.describe()
    )
    assert signal.last_green == runs[-1]
    assert signal.streak == tuple(runs[:5])
    red_first = first_red(signal)
    assert red_first is not None
    assert red_first.build_number == 86214


def test_two_runs_are_enough_to_be_broken() -> None:
    runs = [*red(3, 2), run(1, passed=True)]
    assert judge(AUDIT, runs, same(*runs[:2])).state is SignalState.BROKEN


def test_no_runs_is_unknown() -> None:
    signal = judge(AUDIT, [], {})
    assert (signal.state, signal.reason) == (SignalState.UNKNOWN, REASON_NO_RUNS)
    assert first_red(signal) is None


def test_the_newest_run_passed_is_green() -> None:
    runs = [run(2, passed=True), *red(1)]
    signal = judge(AUDIT, runs, {})
    assert (signal.state, signal.reason) == (SignalState.GREEN, REASON_GREEN.format(number=2))
    assert signal.streak == ()


def test_passed_on_retry_is_green_and_says_so() -> None:
    runs = [run(2, passed=True, on_retry=True), *red(1)]
    signal = judge(AUDIT, runs, {})
    assert signal.state is SignalState.GREEN
    assert signal.reason == REASON_GREEN_ON_RETRY.format(number=2)


def test_one_failure_after_green_is_red() -> None:
    runs = [*red(2), run(1, passed=True)]
    signal = judge(AUDIT, runs, same(runs[0]))
    assert signal.state is SignalState.RED
    assert signal.reason == REASON_RED.format(number=2, signature=ABI.describe())


def test_a_log_not_read_is_unknown() -> None:
    runs = [*red(4, 3, 2), run(1, passed=True)]
    evidence = same(runs[0], runs[2])  # build 3's log missing
    signal = judge(AUDIT, runs, evidence)
    assert signal.state is SignalState.UNKNOWN
    assert signal.reason == REASON_LOG_NOT_READ.format(number=3)


def test_an_older_run_beyond_the_judged_ones_needs_no_log() -> None:
    runs = [*red(5, 4, 3, 2), run(1, passed=True)]
    assert judge(AUDIT, runs, same(*runs[:3])).state is SignalState.BROKEN


def test_infrastructure_is_flaky() -> None:
    runs = [*red(3, 2), run(1, passed=True)]
    evidence = same(*runs[:2])
    evidence[runs[1].job_id] = RunEvidence(ABI, infra="agent lost (exit status -1)")
    signal = judge(AUDIT, runs, evidence)
    assert signal.state is SignalState.FLAKY
    assert signal.reason == REASON_INFRA.format(number=2, infra="agent lost (exit status -1)")


def test_one_infra_failure_is_flaky_not_red() -> None:
    runs = [*red(2), run(1, passed=True)]
    evidence = {runs[0].job_id: RunEvidence(NO_SIGNATURE, infra="expired")}
    assert judge(AUDIT, runs, evidence).state is SignalState.FLAKY


def test_different_signatures_are_flaky() -> None:
    runs = [*red(4, 3, 2), run(1, passed=True)]
    evidence = same(*runs[:3])
    evidence[runs[2].job_id] = RunEvidence(OTHER)
    signal = judge(AUDIT, runs, evidence)
    assert signal.state is SignalState.FLAKY
    assert signal.reason == REASON_DIFFERENT.format(newer=4, older=2)


def test_a_log_without_a_signature_is_unknown() -> None:
    runs = [*red(3, 2), run(1, passed=True)]
    evidence = same(*runs[:2])
    evidence[runs[1].job_id] = RunEvidence(NO_SIGNATURE)
    signal = judge(AUDIT, runs, evidence)
    assert signal.state is SignalState.UNKNOWN
    assert signal.reason == REASON_NO_SIGNATURE.format(number=2)


def test_one_failure_without_a_signature_is_still_red() -> None:
    runs = [*red(2), run(1, passed=True)]
    signal = judge(AUDIT, runs, same(runs[0], signature=NO_SIGNATURE))
    assert signal.state is SignalState.RED


def test_no_green_run_is_unknown() -> None:
    runs = red(3, 2)
    signal = judge(AUDIT, runs, same(*runs))
    assert signal.state is SignalState.UNKNOWN
    assert signal.reason == REASON_NO_GREEN.format(count=2)
    assert judge(AUDIT, red(1), same(*red(1))).state is SignalState.UNKNOWN


@given(
    st.lists(st.booleans(), min_size=1, max_size=8),
    st.lists(st.sampled_from(["abi", "other", "none", "infra", "missing"]), max_size=8),
)
def test_broken_only_on_the_full_evidence(outcomes: list[bool], kinds: list[str]) -> None:
    runs = [run(100 - i, passed=p) for i, p in enumerate(outcomes)]
    evidence: dict[str, RunEvidence] = {}
    for r, kind in zip(runs, kinds, strict=False):
        if kind == "infra":
            evidence[r.job_id] = RunEvidence(ABI, infra="agent lost")
        elif kind != "missing":
            signature = {"abi": ABI, "other": OTHER, "none": NO_SIGNATURE}[kind]
            evidence[r.job_id] = RunEvidence(signature)
    signal = judge(AUDIT, runs, evidence)
    judged = runs_to_read(runs)
    full = [evidence.get(r.job_id) for r in judged]
    broken = (
        len(signal.streak) >= 2
        and last_green(runs) is not None
        and all(e is not None and e.infra is None for e in full)
        and all(
            e is not None and full[0] is not None and e.signature.matches(full[0].signature)
            for e in full
        )
    )
    assert (signal.state is SignalState.BROKEN) == broken
    assert (signal.state is SignalState.GREEN) == runs[0].passed
    assert signal.streak == red_streak(runs)
