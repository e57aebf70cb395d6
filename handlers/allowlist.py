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
from gidgethub.abc import GitHubAPI

from bot.abi.judge import audit_wheel
from bot.allowlist import flow as allowlist_flow
from bot.allowlist.flow import FlowContext
from bot.buildkite.wheels import fetch_wheel, wheel_url
from bot.config.schema import AllowlistConfig
from bot.dashboard.flow import record_allowlist_evidence
from bot.github.changes import Repo
from bot.pins import bump
from bot.pins import text as bump_text
from bot.service.errors import PermanentError
from bot.service.payload import field
from bot.service.services import Services
from bot.service.sources import BUILD_FINISHED, RECONCILE_EVENT

log = logging.getLogger(__name__)
router = routing.Router()

WHEEL_STATE_KIND = "wheel-audit"
# The dashboard's words for the audit's per-pattern decisions.
WHEEL_EVIDENCE = {
    "delete": "stale",
    "narrow": "stale",
    "keep": "unstable",
    "not-on-this-platform": "not on this platform",
}
WHEEL_AUDIT_TIMEOUT = 600.0  # extraction of a 300 MB wheel takes seconds; a slow disk, more

_BUILD_URL = re.compile(
    r"/organizations/(?P<org>[^/]+)/pipelines/(?P<pipeline>[^/]+)/builds/(?P<number>\d+)$"
)
_GITHUB_REPO = re.compile(r"github\.com[:/](?P<repo>[^/]+/[^/]+?)(?:\.git)?/?$")


def repository_of(pipeline_repository: str) -> str | None:
    """``owner/name`` from a pipeline's git URL (https or ssh form)."""
    match = _GITHUB_REPO.search(pipeline_repository)
    return match.group("repo") if match else None


@router.register(BUILD_FINISHED)
async def on_build_finished(event: sansio.Event, services: Services) -> None:
    url = _BUILD_URL.search(field(event.data, "build.url"))
    branch = field(event.data, "build.branch")
    repository = repository_of(field(event.data, "pipeline.repository"))
    if services.buildkite is None:
        return
    repo = services.served(repository) if repository is not None else None
    if url is None or repo is None:
        return
    gh = await services.github.repo_client(repo.full_name)
    config = await bump.load_config(gh, services.store, services.blocking, repo)
    if config is None or config.allowlist is None or config.buildkite is None:
        return
    org, pipeline = url.group("org"), url.group("pipeline")
    if org != config.buildkite.organization or pipeline not in config.buildkite.pipelines:
        return
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
    ctx = _flow_context(services, gh, repo, config.allowlist)
    if is_bump and pin is not None:
        outcome = await allowlist_flow.follow_up_bump(ctx, pin, run)
    else:
        outcome = await allowlist_flow.follow_up_main(ctx, run, default)
    evidence = dict.fromkeys(run.evidence.stale, "stale")
    await record_allowlist_evidence(
        services.store, repo.full_name, config, evidence, now=services.clock()
    )
    log.info("%s: audit evidence from %s: %s", repo.full_name, run.url, outcome)


def _flow_context(
    services: Services, gh: GitHubAPI, repo: Repo, allowlist: AllowlistConfig
) -> FlowContext:
    return FlowContext(
        gh,
        services.store,
        services.locks,
        services.blocking,
        repo,
        allowlist,
        services.settings.bot_login,
    )


@router.register(RECONCILE_EVENT)
async def on_reconcile(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    if repo is None:
        return
    gh = await services.github.repo_client(repo.full_name)
    config = await bump.load_config(gh, services.store, services.blocking, repo)
    allow = config.allowlist if config is not None else None
    if allow is None or allow.wheel_url is None:
        return
    base = await bump.default_branch_head(gh, services.store, repo)
    done = await services.store.get_state(WHEEL_STATE_KIND, repo.full_name)
    if done is not None and done.get("commit") == base.sha:
        return  # this commit's wheel was audited already
    ctx = _flow_context(services, gh, repo, allow)
    text = await ctx.file.read(base.sha)
    if text is None:
        return
    cache = Path(services.settings.cache_dir)
    url = wheel_url(allow.wheel_url, base.sha)
    try:
        wheel = await fetch_wheel(
            services.session,
            services.blocking,
            url,
            cache_dir=cache,
            max_bytes=allow.wheel_max_mb << 20,
        )
        result = await services.blocking.run_for(
            WHEEL_AUDIT_TIMEOUT,
            audit_wheel,
            wheel,
            await ctx.file.entries(text),
            workdir=cache,
            variable=allow.variable,
        )
    except PermanentError as exc:
        # Recorded, not raised: the next commit gets its own try, and a failed
        # audit (no nm, a CPU build) must be visible, never a silent pass.
        log.warning("%s: wheel audit of %s: %s", repo.full_name, base.sha[:7], exc)
        await services.store.put_state(
            WHEEL_STATE_KIND, repo.full_name, {"commit": base.sha, "error": str(exc)}
        )
        return
    run = allowlist_flow.run_from_wheel(result, base.sha, base.name)
    outcome = await allowlist_flow.follow_up_main(ctx, run, base)
    evidence = {p.pattern: WHEEL_EVIDENCE[p.decision] for p in result.patterns}
    await record_allowlist_evidence(
        services.store, repo.full_name, config, evidence, now=services.clock()
    )
    await services.store.put_state(
        WHEEL_STATE_KIND, repo.full_name, {"commit": base.sha, "outcome": outcome}
    )
    log.info("%s: wheel audit of %s: %s", repo.full_name, base.sha[:7], outcome)
