"""Which *subject* a delivery is about, so the inbox never runs two at once.

Keys are coarse on purpose: a push to a repository and a comment on one of
its PRs are about different subjects; two pushes to the same repository are
about the same one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.sources import RECONCILE_EVENT, SYNC_EVENT


def _repo(payload: Mapping[str, Any]) -> str:
    repository = payload.get("repository")
    if isinstance(repository, Mapping):
        name = repository.get("full_name")
        if isinstance(name, str):
            return name.lower()
    return "-"


def _number(payload: Mapping[str, Any]) -> str | None:
    for key in ("pull_request", "issue"):
        item = payload.get(key)
        if isinstance(item, Mapping) and isinstance(item.get("number"), int):
            return str(item["number"])
    return None


def github_subject(event: str, payload: Mapping[str, Any]) -> str:
    """The subject key of a GitHub delivery, or of an internal one (a reconcile tick and a
    repository's share of an upstream push serialise with each other)."""
    repo = _repo(payload)
    if event in (RECONCILE_EVENT, SYNC_EVENT):
        return f"reconcile:{repo}"
    number = _number(payload)
    if number is not None:
        return f"pr:{repo}#{number}"
    return f"repo:{repo}"


def buildkite_subject(event: str, payload: Mapping[str, Any]) -> str:
    """Buildkite deliveries about one branch of one pipeline share a subject."""
    build = payload.get("build")
    if not isinstance(build, Mapping):
        return f"buildkite:{event}"
    pipeline = str(build.get("url", "-")).rsplit("/builds/", 1)[0]
    return f"buildkite:{pipeline}@{build.get('branch', '-')}"
