"""A Buildkite build event of a configured pipeline, with its repository's scope.

Shared by every handler of Buildkite build and job events, in two steps so that the
hundreds of events of one build cost GitHub nothing unless a feature acts on them:

- ``build_event`` reads the payload alone: the build named by its URL, its branch, and
  the repository the pipeline builds (it must be served). A handler decides from that
  (the job's state, the branch, a nightly build) before anything is asked.
- ``scope_of`` then takes the repository's config (the one read at main's head in the
  last minutes: ``bot.context.config_load.recent_config``, no request) and checks that its
  Buildkite section names that organisation and pipeline.

``on_default_branch`` says whether the build is of the default branch by the name the
store remembers (GitHub is asked only the first time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.buildkite.pipelines import build_location, repository_of
from bot.context.scope import RepoScope, repo_scope
from bot.context.services import Services
from bot.core.payload import field
from bot.github.changes import Repo
from bot.github.default_branch import default_branch_name
from bot.store.kinds import Kind


@dataclass(frozen=True)
class BuildEvent:
    """What a build or job event's payload says, read before any request."""

    repo: Repo
    org: str
    pipeline: str
    number: int
    branch: str
    build: Mapping[str, Any]  # the payload's build (no jobs)


@dataclass(frozen=True)
class BuildScope:
    scope: RepoScope
    org: str
    pipeline: str
    number: int
    branch: str
    build: Mapping[str, Any]  # the payload's build (no jobs)


def build_event(services: Services, data: Mapping[str, Any]) -> BuildEvent | None:
    """None when the event is not about a build of a served repository (or Buildkite's
    API is not configured). Reads the payload only."""
    location = build_location(field(data, "build.url"))
    branch = field(data, "build.branch")
    repository = repository_of(field(data, "pipeline.repository"))
    repo = services.served(repository) if repository is not None else None
    if services.buildkite is None or location is None or repo is None:
        return None
    org, pipeline, number = location
    build = data.get("build")
    found = build if isinstance(build, Mapping) else {}
    return BuildEvent(repo, org, pipeline, number, branch, found)


async def on_default_branch(services: Services, event: BuildEvent) -> bool:
    """Whether the build is of the repository's default branch (the remembered name)."""
    known = await services.store.get_state(Kind.REPO, event.repo.full_name)
    name = known.get("default_branch") if known is not None else None
    if not isinstance(name, str):
        gh = await services.github.repo_client(event.repo.full_name)
        name = await default_branch_name(gh, services.store, event.repo)
    return event.branch == name


async def scope_of(services: Services, event: BuildEvent) -> BuildScope | None:
    """None when the repository's config does not name the event's pipeline."""
    scope = await repo_scope(services, event.repo, recent=True)
    where = scope.config.buildkite if scope is not None else None
    if scope is None or where is None or event.org != where.organization:
        return None
    if event.pipeline not in where.pipelines:
        return None
    return BuildScope(scope, event.org, event.pipeline, event.number, event.branch, event.build)


async def build_scope(services: Services, data: Mapping[str, Any]) -> BuildScope | None:
    """None when the event is not about a configured pipeline of a served repository."""
    event = build_event(services, data)
    return await scope_of(services, event) if event is not None else None
