"""Which GitHub repository a Buildkite pipeline builds (from its git URL), and which
organisation, pipeline and build a webhook's build URL names."""

from __future__ import annotations

import re

_BUILD_URL = re.compile(
    r"/organizations/(?P<org>[^/]+)/pipelines/(?P<pipeline>[^/]+)/builds/(?P<number>\d+)$"
)
_GITHUB_REPO = re.compile(r"github\.com[:/](?P<repo>[^/]+/[^/]+?)(?:\.git)?/?$")


def repository_of(pipeline_repository: str) -> str | None:
    """``owner/name`` from a pipeline's git URL (https or ssh form)."""
    match = _GITHUB_REPO.search(pipeline_repository)
    return match.group("repo") if match else None


def build_location(build_url: str) -> tuple[str, str, int] | None:
    """``(organization, pipeline, number)`` of a build's REST URL."""
    match = _BUILD_URL.search(build_url)
    if match is None:
        return None
    return match.group("org"), match.group("pipeline"), int(match.group("number"))
