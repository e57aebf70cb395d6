"""Where audit evidence comes from: a finished Buildkite build of a bump branch or of
the default branch, or the bot's own audit of the default branch's wheel."""

from __future__ import annotations

import logging
from pathlib import Path

import aiohttp

from bot.abi.judge import audit_wheel
from bot.allowlist.evidence import audit_run_from_build, run_from_wheel
from bot.allowlist.evidence_record import record_allowlist_evidence
from bot.allowlist.follow_up import allowlist_file
from bot.allowlist.on_bump import follow_up_bump
from bot.allowlist.stale_pr import follow_up_main
from bot.buildkite.wheels import fetch_wheel, wheel_url
from bot.context.scope import RepoScope
from bot.core.errors import PermanentError
from bot.github.default_branch import default_branch_head, default_branch_name
from bot.pins import text as bump_text
from bot.store.kinds import Kind

log = logging.getLogger(__name__)

# The dashboard's words for the audit's per-pattern decisions.
WHEEL_EVIDENCE = {
    "delete": "stale",
    "narrow": "stale",
    "keep": "unstable",
    "not-on-this-platform": "not on this platform",
}
WHEEL_AUDIT_TIMEOUT = 600.0  # extraction of a 300 MB wheel takes seconds; a slow disk, more
NOT_OURS = "not a bump branch nor the default branch"
NO_AUDIT_JOB = "the build has no audit job with evidence"
AUDITED_ALREADY = "this commit's wheel was audited already"
NO_ALLOWLIST_FILE = "the allowlist file does not exist"


async def from_build(scope: RepoScope, pipeline: str, number: int, branch: str) -> str:
    """A finished build of ``pipeline`` (one the config names): its audit job's evidence
    feeds the bump PR of its branch, or the stale-entries PR when it built the default
    branch."""
    allowlist, organization = scope.allowlist, _organization(scope)
    pin = scope.config.pin(branch.removeprefix(bump_text.BRANCH_PREFIX))
    is_bump = branch.startswith(bump_text.BRANCH_PREFIX) and pin is not None
    # The remembered name, and main's head only once there is evidence to weigh: a
    # build without the audit job asks GitHub nothing.
    if not is_bump and branch != await default_branch_name(scope.gh, scope.store, scope.repo):
        return NOT_OURS
    run = await audit_run_from_build(
        scope.buildkite,
        organization,
        pipeline,
        number,
        step_key=allowlist.audit_step,
        variable=allowlist.variable,
    )
    if run is None:
        return NO_AUDIT_JOB
    if pin is not None and is_bump:
        outcome = await follow_up_bump(scope, pin, run)
    else:
        default = await default_branch_head(scope.gh, scope.store, scope.repo)
        outcome = await follow_up_main(scope, run, default)
    evidence = dict.fromkeys(run.evidence.stale, "stale")
    await record_allowlist_evidence(
        scope.store, scope.repo.full_name, scope.config, evidence, now=scope.clock()
    )
    return f"audit evidence from {run.url}: {outcome}"


def _organization(scope: RepoScope) -> str:
    if scope.config.buildkite is None:
        raise RuntimeError(f"{scope.repo.full_name}: buildkite is not configured")
    return scope.config.buildkite.organization


async def audit_default_wheel(scope: RepoScope, session: aiohttp.ClientSession, cache: Path) -> str:
    """The bot's own audit of the default branch head's wheel (``allowlist.wheel_url``),
    once per commit; a failed audit is recorded and said, never a silent pass."""
    allow = scope.allowlist
    assert allow.wheel_url is not None, "the handler checks wheel_url first"
    base = await default_branch_head(scope.gh, scope.store, scope.repo)
    done = await scope.store.get_state(Kind.WHEEL_AUDIT, scope.repo.full_name)
    if done is not None and done.get("commit") == base.sha:
        return AUDITED_ALREADY
    file = allowlist_file(scope)
    text = await file.read(base.sha)
    if text is None:
        return NO_ALLOWLIST_FILE
    try:
        wheel = await fetch_wheel(
            session,
            scope.blocking,
            wheel_url(allow.wheel_url, base.sha),
            cache_dir=cache,
            max_bytes=allow.wheel_max_mb << 20,
        )
        result = await scope.blocking.run_for(
            WHEEL_AUDIT_TIMEOUT,
            audit_wheel,
            wheel,
            await file.entries(text),
            workdir=cache,
            variable=allow.variable,
        )
    except PermanentError as exc:
        # Recorded, not raised: the next commit gets its own try, and a failed
        # audit (no nm, a CPU build) must be visible, never a silent pass.
        await scope.store.put_state(
            Kind.WHEEL_AUDIT, scope.repo.full_name, {"commit": base.sha, "error": str(exc)}
        )
        return f"wheel audit of {base.sha[:7]} failed: {exc}"
    run = run_from_wheel(result, base.sha, base.name)
    outcome = await follow_up_main(scope, run, base)
    evidence = {p.pattern: WHEEL_EVIDENCE[p.decision] for p in result.patterns}
    await record_allowlist_evidence(
        scope.store, scope.repo.full_name, scope.config, evidence, now=scope.clock()
    )
    await scope.store.put_state(
        Kind.WHEEL_AUDIT, scope.repo.full_name, {"commit": base.sha, "outcome": outcome}
    )
    return f"wheel audit of {base.sha[:7]}: {outcome}"
