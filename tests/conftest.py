"""Suite-wide settings: the Hypothesis profiles and the order tests are handed to workers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# HYPOTHESIS_PROFILE=ci (set by .ci/run) makes every property test replay the same
# examples run after run, so a red CI build is the code's fault and reproducible, never a
# lucky draw; without it Hypothesis keeps exploring new examples on developers' machines.
# The example counts stay as they are: the property tests are a few percent of the suite's
# time, and the heaviest ones set their own max_examples, which a profile does not override.
settings.register_profile("ci", derandomize=True, print_blob=True)
if "HYPOTHESIS_PROFILE" in os.environ:
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])

E2E = Path(__file__).parent / "e2e"
# The longest tests by far (about 50 s and 15 s on two workers): handed out first so that
# no worker is still running one of them after the others have run out of work.
LONGEST = {
    "tests/e2e/test_crash_effects.py::test_random_kills_over_many_mixed_deliveries",
    "tests/e2e/test_upstream_references.py::test_a_long_upstream_history_lists_the_newest_commits",
}


def _start_order(item: pytest.Item) -> int:
    if item.nodeid in LONGEST:
        return 0
    return 1 if item.path.is_relative_to(E2E) else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first, then the end-to-end tests (~80% of the suite's time, every test over
    a second), then the many short unit tests, which fill the workers' tails evenly. Only an
    order: a test missing from LONGEST still runs, and the sort is stable and the same on
    every xdist worker, as xdist requires.
    """
    items.sort(key=_start_order)
