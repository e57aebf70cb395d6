"""A job log saying the registry has no manifest for the image the job pulls.

Docker says ``manifest for <image> not found: manifest unknown``; containerd and the
registry's own error say ``manifest unknown``. Shared by the retry classifier (its own
failure class, never retried) and the image check (which asks the registry why).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MISSING_IMAGE_PATTERN = r"manifest unknown|manifest for \S+ not found"
_MISSING = re.compile(MISSING_IMAGE_PATTERN)
# pytest node ids (and plain .py paths) are masked before a log line is searched: a test
# named after a missing manifest is no evidence about the registry. A path starts only
# after a space, bracket or quote, which keeps the search linear.
TEST_ID = re.compile(r"(?<![^\s\[(\"'])[\w./-]+\.py\b(?:::\S+)?")
# Only the head of a very long line is searched: enough for any real evidence, and it
# bounds the cost of patterns on hostile logs.
MAX_SEARCHED_CHARS = 8192


def masked(line: str) -> str:
    return TEST_ID.sub("<test>", line[:MAX_SEARCHED_CHARS])


def image_missing_line(lines: Sequence[str] | None) -> str | None:
    """The log line nearest the end saying the registry has no such image."""
    for line in reversed(lines or ()):
        if _MISSING.search(masked(line)):
            return line
    return None
