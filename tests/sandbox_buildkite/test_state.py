"""The build-state rules of the stand-in, without HTTP."""

from __future__ import annotations

import pytest

from sandbox.buildkite_state import JobSpec, World, as_outcome

from ..sandbox.helpers import FakeClock


def build_state(*jobs: JobSpec) -> str:
    world = World(FakeClock())
    world.add_pipeline("ci", None, "repo")
    build = world.create_build(
        "ci", commit="c", branch="main", jobs=jobs, message="", pull_request=None, state=None
    )
    return build.state


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ((), "passed"),
        (("passed", "skipped"), "passed"),
        (("passed", "failed"), "failed"),
        (("passed", "timed_out"), "failed"),
        (("passed", "expired"), "failed"),
        (("passed", "canceled"), "canceled"),
        (("failed", "canceled"), "failed"),
        (("scheduled",), "scheduled"),
        (("passed", "scheduled"), "running"),
        (("running",), "running"),
        (("failed", "running"), "failing"),
    ],
)
def test_build_state_follows_jobs(states: tuple[str, ...], expected: str) -> None:
    assert build_state(*(JobSpec(f"k{i}", "K", state=s) for i, s in enumerate(states))) == expected


def test_soft_failed_job_does_not_fail_the_build() -> None:
    assert build_state(JobSpec("k", "K", state="failed", soft_failed=True)) == "passed"


def test_outcome_state_is_checked() -> None:
    world = World(FakeClock())
    with pytest.raises(ValueError, match="unknown job state"):
        world.set_outcome("k", as_outcome("nope", 0, b"", "immediately"))
    assert as_outcome("passed", 0, "text", "on_demand").log == b"text"
