"""Torch ABI audit evidence → allowlist follow-ups.

A finished Buildkite build of a bump branch feeds that bump PR; a finished
build of the default branch feeds the one stale-entries PR; everything else is
ignored. Where the repo config names a wheel URL, each reconcile tick also
audits the wheel of the default branch's head itself (once per commit).
"""

from __future__ import annotations

import logging
from pathlib import Path

from gidgethub import routing, sansio

from bot.allowlist import intake
from bot.context.build_scope import build_event, on_default_branch, scope_of
from bot.context.handler_ids import handler_id
from bot.context.scope import repo_scope
from bot.context.services import Services
from bot.core.payload import field
from bot.core.sources import BUILD_FINISHED, RECONCILE_EVENT
from bot.pins.text import BRANCH_PREFIX

log = logging.getLogger(__name__)
router = routing.Router()


@router.register(BUILD_FINISHED)
@handler_id("allowlist.build-finished")
async def on_build_finished(event: sansio.Event, services: Services) -> None:
    build = build_event(services, event.data)
    if build is None:
        return
    # Decided before the config is taken: most builds are PRs' (GitHub is asked nothing).
    if not build.branch.startswith(BRANCH_PREFIX) and not await on_default_branch(services, build):
        return
    found = await scope_of(services, build)
    if found is None or found.scope.config.allowlist is None:
        return
    outcome = await intake.from_build(found.scope, found.pipeline, found.number, found.branch)
    log.info("%s: build #%d: %s", found.scope.repo.full_name, found.number, outcome)


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
