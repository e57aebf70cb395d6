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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """End-to-end tests first: they are ~80% of the suite's time and hold every long test
    (one runs ~50 s), so starting them first lets the many short unit tests fill both
    workers' tails instead of one worker finishing a long test alone. The order is the
    same on every xdist worker (a stable sort of the same collection), as xdist requires.
    """
    items.sort(key=lambda item: not item.path.is_relative_to(E2E))
