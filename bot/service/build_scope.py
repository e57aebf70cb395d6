"""A Buildkite build event of a configured pipeline, with its repository's scope.

Shared by every handler of Buildkite build and job events: the build named by the
payload's URL, the repository the pipeline builds (it must be served), and the repo
config's Buildkite section naming that organisation and pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.buildkite.pipelines import build_location, repository_of
from bot.service.payload import field
from bot.service.scope import RepoScope, repo_scope
from bot.service.services import Services


@dataclass(frozen=True)
class BuildScope:
    scope: RepoScope
    org: str
    pipeline: str
    number: int
    branch: str
    build: Mapping[str, Any]  # the payload's build (no jobs)


async def build_scope(services: Services, data: Mapping[str, Any]) -> BuildScope | None:
    """None when the event is not about a configured pipeline of a served repository."""
    location = build_location(field(data, "build.url"))
    branch = field(data, "build.branch")
    repository = repository_of(field(data, "pipeline.repository"))
    repo = services.served(repository) if repository is not None else None
    if services.buildkite is None or location is None or repo is None:
        return None
    scope = await repo_scope(services, repo)
    where = scope.config.buildkite if scope is not None else None
    org, pipeline, number = location
    if scope is None or where is None or org != where.organization:
        return None
    if pipeline not in where.pipelines:
        return None
    build = data.get("build")
    return BuildScope(
        scope, org, pipeline, number, branch, build if isinstance(build, Mapping) else {}
    )
