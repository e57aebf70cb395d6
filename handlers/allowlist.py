"""Torch ABI audit evidence from Buildkite → allowlist follow-ups.

A finished build of a bump branch feeds that bump PR; a finished build of the
default branch feeds the one stale-entries PR. Everything else is ignored.
"""

from __future__ import annotations

import logging
import re

from gidgethub import routing, sansio

from bot import allowlist_flow, bump, bump_text
from bot.allowlist_flow import FlowContext
from bot.changes import Repo
from bot.payload import field
from bot.services import Services

log = logging.getLogger(__name__)
router = routing.Router()

_BUILD_URL = re.compile(
    r"/organizations/(?P<org>[^/]+)/pipelines/(?P<pipeline>[^/]+)/builds/(?P<number>\d+)$"
)
_GITHUB_REPO = re.compile(r"github\.com[:/](?P<repo>[^/]+/[^/]+?)(?:\.git)?/?$")


def repository_of(pipeline_repository: str) -> str | None:
    """``owner/name`` from a pipeline's git URL (https or ssh form)."""
    match = _GITHUB_REPO.search(pipeline_repository)
    return match.group("repo") if match else None


@router.register("build.finished")
async def on_build_finished(event: sansio.Event, services: Services) -> None:
    if services.buildkite is None:
        return
    url = _BUILD_URL.search(field(event.data, "build.url"))
    repository = repository_of(field(event.data, "pipeline.repository"))
    known = {repo.lower(): repo for repo in services.settings.repositories}
    if url is None or repository is None or repository.lower() not in known:
        return
    repo = Repo.parse(known[repository.lower()])
    gh = await services.github.repo_client(repo.full_name)
    config = await bump.load_config(gh, services.store, services.blocking, repo)
    if config is None or config.allowlist is None or config.buildkite is None:
        return
    org, pipeline = url.group("org"), url.group("pipeline")
    if org != config.buildkite.organization or pipeline not in config.buildkite.pipelines:
        return
    branch = field(event.data, "build.branch")
    pin = config.pin(branch.removeprefix(bump_text.BRANCH_PREFIX))
    is_bump = branch.startswith(bump_text.BRANCH_PREFIX) and pin is not None
    default = await bump.default_branch_head(gh, services.store, repo)
    if not is_bump and branch != default.name:
        return
    run = await allowlist_flow.audit_run_from_build(
        services.buildkite,
        org,
        pipeline,
        int(url.group("number")),
        step_key=config.allowlist.audit_step,
        variable=config.allowlist.variable,
    )
    if run is None:
        return
    ctx = FlowContext(gh, services.store, services.locks, services.blocking, repo, config.allowlist)
    if is_bump and pin is not None:
        outcome = await allowlist_flow.follow_up_bump(ctx, pin, run)
    else:
        outcome = await allowlist_flow.follow_up_main(ctx, run, default)
    log.info("%s: audit evidence from %s: %s", repo.full_name, run.url, outcome)
