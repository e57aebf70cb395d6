"""Torch ABI audit evidence → allowlist follow-ups.

A finished Buildkite build of a bump branch feeds that bump PR; a finished
build of the default branch feeds the one stale-entries PR; everything else is
ignored. Where the repo config names a wheel URL, each reconcile tick also
audits the wheel of the default branch's head itself (once per commit).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from gidgethub import routing, sansio

from bot.allowlist import intake
from bot.buildkite.pipelines import repository_of
from bot.service.dispatch import handler_id
from bot.service.payload import field
from bot.service.scope import repo_scope
from bot.service.services import Services
from bot.service.sources import BUILD_FINISHED, RECONCILE_EVENT

log = logging.getLogger(__name__)
router = routing.Router()

_BUILD_URL = re.compile(
    r"/organizations/(?P<org>[^/]+)/pipelines/(?P<pipeline>[^/]+)/builds/(?P<number>\d+)$"
)


@router.register(BUILD_FINISHED)
@handler_id("allowlist.build-finished")
async def on_build_finished(event: sansio.Event, services: Services) -> None:
    url = _BUILD_URL.search(field(event.data, "build.url"))
    branch = field(event.data, "build.branch")
    repository = repository_of(field(event.data, "pipeline.repository"))
    repo = services.served(repository) if repository is not None else None
    if services.buildkite is None or url is None or repo is None:
        return
    scope = await repo_scope(services, repo)
    where = scope.config.buildkite if scope is not None else None
    if scope is None or scope.config.allowlist is None or where is None:
        return
    if url.group("org") != where.organization or url.group("pipeline") not in where.pipelines:
        return
    number = int(url.group("number"))
    outcome = await intake.from_build(scope, url.group("pipeline"), number, branch)
    log.info("%s: build #%d: %s", repo.full_name, number, outcome)


@router.register(RECONCILE_EVENT)
@handler_id("allowlist.reconcile")
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    scope = await repo_scope(services, repo) if repo is not None else None
    allow = scope.config.allowlist if scope is not None else None
    if scope is None or allow is None or allow.wheel_url is None:
        return
    cache = Path(services.settings.cache_dir)
    outcome = await intake.audit_default_wheel(scope, services.session, cache)
    log.info("%s: %s", scope.repo.full_name, outcome)
