"""Main's builds: a step red on main gets its follow-ups (issue, culprit comment, partial
revert), and a build's images are asked of the registry when a job could not pull one or
a torch-nightly build finished.

Each handler decides from the payload (the job's state, the branch, a nightly build)
before it takes the repository's config: a main build's hundreds of ``job.finished``
events cost GitHub nothing.
"""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot.buildkite import job_states
from bot.context.build_scope import build_event, on_default_branch, scope_of
from bot.context.handler_ids import handler_id
from bot.context.services import Services
from bot.core.payload import field
from bot.core.sources import BUILD_FINISHED, JOB_FINISHED
from bot.images.check import is_nightly, on_failed_job, on_nightly_build
from bot.main_red.flow import main_build_finished

log = logging.getLogger(__name__)
router = routing.Router()


@router.register(BUILD_FINISHED)
@handler_id("main-red.build-finished")
async def on_build_finished(event: sansio.Event, services: Services) -> None:
    build = build_event(services, event.data)
    if build is None or not await on_default_branch(services, build):
        return  # other builds are no signal of main
    found = await scope_of(services, build)
    if found is None or found.scope.config.main_red is None:
        return
    for outcome in await main_build_finished(found):
        name = found.scope.repo.full_name
        log.info("%s: %s on main: %s (%s)", name, outcome.step, outcome.state, outcome.action)


@router.register(BUILD_FINISHED)
@handler_id("images.nightly-build")
async def on_nightly_finished(event: sansio.Event, services: Services) -> None:
    build = build_event(services, event.data)
    if build is None or not is_nightly(build.build):
        return
    found = await scope_of(services, build)
    check = await on_nightly_build(found) if found is not None else None
    if found is not None and check is not None:
        log.info(
            "%s: images of nightly build #%d: %d missing",
            found.scope.repo.full_name,
            found.number,
            len(check.missing),
        )


@router.register(JOB_FINISHED)
@handler_id("images.job-failed")
async def on_job_finished(event: sansio.Event, services: Services) -> None:
    job = field(event.data, "job", dict)
    build = build_event(services, event.data)
    if build is None or not job_states.ran_and_failed(job):
        return  # a passed (or canceled) job pulled its image, or never tried
    if not await on_default_branch(services, build):
        return  # a PR's missing image is proved when retry-flaky or landing asks
    found = await scope_of(services, build)
    check = await on_failed_job(found, job) if found is not None else None
    if found is not None and check is not None:
        log.info(
            "%s: images of build #%d: %d missing",
            found.scope.repo.full_name,
            found.number,
            len(check.missing),
        )
