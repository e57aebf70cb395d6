"""Which GitHub repository a Buildkite pipeline builds (from its git URL)."""

from __future__ import annotations

import re

_GITHUB_REPO = re.compile(r"github\.com[:/](?P<repo>[^/]+/[^/]+?)(?:\.git)?/?$")


def repository_of(pipeline_repository: str) -> str | None:
    """``owner/name`` from a pipeline's git URL (https or ssh form)."""
    match = _GITHUB_REPO.search(pipeline_repository)
    return match.group("repo") if match else None
