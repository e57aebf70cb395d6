"""Which check runs keep a bump from being merged by the bot."""

from __future__ import annotations

from typing import Any

import pytest

from bot.landing.rules import check_runs_not_green, latest_check_runs


def run(
    name: str, run_id: int, status: str = "completed", conclusion: str | None = "success"
) -> dict[str, Any]:
    return {"id": run_id, "name": name, "status": status, "conclusion": conclusion}


def test_every_run_green_or_neutral_or_skipped_is_green() -> None:
    runs = [
        run("lint", 1),
        run("docs", 2, conclusion="neutral"),
        run("gpu", 3, conclusion="skipped"),
    ]
    assert check_runs_not_green(runs, ["*"]) is None


def test_no_check_runs_at_all_is_green_under_globs() -> None:
    assert check_runs_not_green([], ["*"]) is None


@pytest.mark.parametrize(
    ("failed", "why"),
    [
        (run("lint", 1, conclusion="failure"), "check run 'lint' concluded failure"),
        (run("lint", 1, conclusion="timed_out"), "check run 'lint' concluded timed_out"),
        (run("lint", 1, conclusion="cancelled"), "check run 'lint' concluded cancelled"),
        (
            run("lint", 1, conclusion="action_required"),
            "check run 'lint' concluded action_required",
        ),
        (run("lint", 1, status="in_progress", conclusion=None), "check run 'lint' is in_progress"),
        (run("lint", 1, status="queued", conclusion=None), "check run 'lint' is queued"),
    ],
)
def test_a_failed_or_pending_run_blocks(failed: dict[str, Any], why: str) -> None:
    assert check_runs_not_green([run("docs", 2), failed], ["*"]) == why


def test_the_newest_run_of_a_name_counts() -> None:
    rerun = [run("lint", 1, conclusion="failure"), run("lint", 5)]
    assert check_runs_not_green(rerun, ["*"]) is None
    assert check_runs_not_green(list(reversed(rerun)), ["*"]) is None
    assert latest_check_runs(rerun)["lint"]["id"] == 5


def test_only_required_names_count_and_a_named_one_is_waited_for() -> None:
    runs = [run("lint", 1, conclusion="failure"), run("build / test (3.11)", 2)]
    assert check_runs_not_green(runs, ["build / *"]) is None
    assert check_runs_not_green(runs, ["build / test (3.11)", "docs"]) == (
        "check run 'docs' has not reported"
    )
    assert check_runs_not_green(runs, []) is None
