"""Landing an approved bump: label it for full CI, then merge it once it is green.

Everything is level-triggered from what GitHub and Buildkite say now, with the
little the bot must remember in one store document per PR (kind ``landing``,
key ``<repo>#<number>``): which head was approved, whether auto-merge was
enabled for it, how many CI runs of it failed, and which comments were posted.
So an approval, a ``status`` webhook, a finished Buildkite build or a
redelivery of any of them each just call in, and only missing writes happen.

The approval is bound to the head it was given on: the merge names that sha
(GitHub answers 409 if the head moved), auto-merge is enabled with it as the
expected head, and a newer head voids the approval with one comment.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.buildkite import job_states
from bot.buildkite.client import BuildkiteClient
from bot.config.models import BuildkiteConfig
from bot.github import changes, effects
from bot.github.changes import Repo
from bot.github.permissions import has_write, permission_level
from bot.landing import text as landing_text
from bot.landing.rules import (
    CODEOWNERS_PATHS,
    OwnerRule,
    approved_at_head,
    check_runs_not_green,
    may_retry,
    parse_codeowners,
    paths_not_owned_by,
    paths_outside,
    touched_paths,
)
from bot.landing.rules import in_cooldown as in_cooldown
from bot.pins import text as bump_text
from bot.retry import flow as retry_flow
from bot.retry.classify import Verdict
from bot.retry.flow import FoundBuild, hard_failures
from bot.service.scope import RepoScope
from bot.store.kinds import Kind, pin_key, pr_key
from bot.store.protocol import Store
from bot.store.state_doc import StateDoc

log = logging.getLogger(__name__)

PASSED, FAILED, BLOCKED = "passed", "failed", "blocked"
SUCCESS = "success"
MERGE_NOT_ALLOWED = 405  # required checks or reviews not satisfied (yet)
MERGE_HEAD_MOVED = 409  # the sha we named is no longer the head
GRAPHQL_METHODS = {"merge": "MERGE", "squash": "SQUASH", "rebase": "REBASE"}
WAITING_NEVER_RAN = "build #{number} failed only by jobs that never ran ({names}); nothing to retry"

ENABLE_AUTO_MERGE = """
mutation($pr: ID!, $method: PullRequestMergeMethod!, $head: GitObjectID!) {
  enablePullRequestAutoMerge(
    input: {pullRequestId: $pr, mergeMethod: $method, expectedHeadOid: $head}
  ) {
    pullRequest { number }
  }
}
"""
DISABLE_AUTO_MERGE = """
mutation($pr: ID!) {
  disablePullRequestAutoMerge(input: {pullRequestId: $pr}) {
    pullRequest { number }
  }
}
"""


class LandingOutcome(enum.StrEnum):
    """What one call into the landing flow did (the log line's first words)."""

    NOT_OPEN = "the PR is not open"
    CLOSED = "the PR is closed"
    NOT_APPROVED = "not approved for landing"
    REFUSED = "approval refused"
    LEFT_TO_HUMANS = "landing of this head was left to humans"
    ALREADY_MERGED = "already merged"
    AUTO_MERGE = "auto-merge enabled; GitHub merges when the required checks pass"
    WAITING = "waiting"
    NOT_MERGEABLE_YET = "not mergeable yet (405); waiting for the next status"
    CONFLICT = "merge conflict (409) at the approved head; waiting"
    MERGED = "merged"
    APPROVAL_STANDS = "approval still stands"
    CHANGES_REQUESTED = "changes requested: landing stopped"
    DISMISSED = "approval dismissed: landing stopped"
    NOT_THE_APPROVAL = "not the approval being landed on"
    REAPPROVAL_REQUESTED = "approval void: re-approval requested"
    NOTHING_TO_DO = "nothing to do"
    HANDLED_ALREADY = "this failure was handled already"
    RETRIED = "retried flaky jobs"
    STOPPED = "landing stopped: left to humans"


@dataclass(frozen=True)
class Landing:
    outcome: LandingOutcome
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.outcome}: {self.detail}" if self.detail else str(self.outcome)


@dataclass(frozen=True)
class Approval:
    number: int
    review_id: int
    login: str
    commit_id: str | None


@dataclass
class LandingState(StateDoc):
    """What the bot remembers about landing one PR (a store document)."""

    pin: str | None = None
    approved_head: str | None = None
    approved_by: str | None = None
    review_id: int | None = None
    auto_merge_for: str | None = None  # the head auto-merge was enabled for
    failed_runs: dict[str, int] = field(default_factory=dict)  # head → failed CI runs
    seen_failures: list[str] = field(default_factory=list)  # build failures already acted on
    handling: dict[str, int] = field(default_factory=dict)  # a failure being acted on → its run
    stopped_for: str | None = None  # a real failure left this head to humans
    reapproval_for: str | None = None  # the head the "re-approval needed" comment is about
    merged_sha: str | None = None


def state_key(repo: Repo, number: int) -> str:
    return pr_key(repo, number)


def pr_lock(repo: Repo, number: int) -> str:
    """The same lock retry-flaky holds, so the two never act on one PR at once."""
    return f"{repo.full_name}#pr{number}"


def is_bot_bump(pull: Mapping[str, Any], bot_login: str) -> bool:
    """A PR the bot generated: its bump branch, opened by the bot itself."""
    head_ref = str((pull.get("head") or {}).get("ref") or "")
    author = str((pull.get("user") or {}).get("login") or "")
    return head_ref.startswith(bump_text.BRANCH_PREFIX) and author == bot_login


async def _load(ctx: RepoScope, number: int) -> LandingState:
    return LandingState.load(await ctx.store.get_state(Kind.LANDING, state_key(ctx.repo, number)))


async def _save(ctx: RepoScope, number: int, state: LandingState) -> None:
    await ctx.store.put_state(Kind.LANDING, state_key(ctx.repo, number), state.dump())


async def _pull(ctx: RepoScope, number: int) -> dict[str, Any]:
    pull: dict[str, Any] = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}", url_vars=ctx.repo.vars(number=str(number))
    )
    return pull


# --- approval ----------------------------------------------------------------------------


async def on_approval(ctx: RepoScope, approval: Approval) -> Landing:
    """An approving review was submitted on a bot bump PR; returns a line for the log."""
    async with ctx.locks.hold(pr_lock(ctx.repo, approval.number)):
        pull = await _pull(ctx, approval.number)
        if pull["state"] != "open":
            return Landing(LandingOutcome.NOT_OPEN)
        head = str(pull["head"]["sha"])
        files = [
            entry
            async for entry in ctx.gh.getiter(
                "/repos/{owner}/{repo}/pulls/{number}/files{?per_page}",
                url_vars=ctx.repo.vars(number=str(approval.number), per_page="100"),
            )
        ]
        paths = touched_paths(files)
        refusal = await _refusal(ctx, approval, head, paths)
        if refusal is not None:
            reason, next_step = refusal
            await _refuse_once(ctx, approval, reason, next_step)
            return Landing(LandingOutcome.REFUSED, reason)
        state = await _load(ctx, approval.number)
        if state.stopped_for == head:
            return Landing(LandingOutcome.LEFT_TO_HUMANS)
        state.pin = str(pull["head"]["ref"]).removeprefix(bump_text.BRANCH_PREFIX)
        state.approved_head, state.approved_by = head, approval.login
        state.review_id = approval.review_id
        await _save(ctx, approval.number, state)
        await _add_missing_labels(ctx, pull)
        return await _advance(ctx, approval.number, state, pull)


async def _refusal(
    ctx: RepoScope, approval: Approval, head: str, paths: list[str]
) -> tuple[str, str] | None:
    """Why this approval does not land the PR (reason, next step), or None."""
    level = await permission_level(ctx.gh, ctx.repo, approval.login)
    if not has_write(level):
        if not ctx.landing.codeowners:
            return landing_text.WHY_PERMISSION, landing_text.NEXT_STEP_HUMAN
        rules = await _codeowners(ctx)
        not_owned = paths_not_owned_by(approval.login, paths, rules)
        if not paths or not_owned:
            reason = landing_text.WHY_PERMISSION_OR_OWNER.format(
                paths=landing_text.code(not_owned) or "its files"
            )
            return reason, landing_text.NEXT_STEP_HUMAN
    if not approved_at_head(approval.commit_id, head):
        reason = landing_text.WHY_STALE.format(
            approved7=str(approval.commit_id or "?")[:7], head7=head[:7]
        )
        return reason, landing_text.NEXT_STEP_REAPPROVE
    outside = paths_outside(paths, ctx.landing.paths)
    if outside:
        reason = landing_text.WHY_PATHS.format(
            paths=landing_text.code(outside), globs=landing_text.code(ctx.landing.paths)
        )
        return reason, landing_text.NEXT_STEP_HUMAN
    return None


async def _codeowners(ctx: RepoScope) -> list[OwnerRule]:
    """The default branch's CODEOWNERS rules (none when there is no such file)."""
    for path in CODEOWNERS_PATHS:
        raw = await changes.read_file(ctx.gh, ctx.repo, path, None)
        if raw is not None:
            return await ctx.blocking.run(parse_codeowners, raw.decode("utf-8", "replace"))
    return []


async def _refuse_once(ctx: RepoScope, approval: Approval, reason: str, next_step: str) -> None:
    body = landing_text.REFUSED.format(login=approval.login, reason=reason, next_step=next_step)
    marker = landing_text.MARKER_REFUSED.format(review=approval.review_id)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, approval.number, body, marker)


async def _add_missing_labels(ctx: RepoScope, pull: Mapping[str, Any]) -> None:
    have = {str(label["name"]).casefold() for label in pull.get("labels") or []}
    missing = [name for name in ctx.landing.labels_on_approval if name.casefold() not in have]
    if missing:
        await ctx.gh.post(
            "/repos/{owner}/{repo}/issues/{number}/labels",
            url_vars=ctx.repo.vars(number=str(pull["number"])),
            data={"labels": missing},
        )


# --- landing -----------------------------------------------------------------------------


async def advance(ctx: RepoScope, number: int) -> Landing:
    """Something about the PR's checks changed: land it if it is approved and green."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await _load(ctx, number)
        if state.approved_head is None:
            return Landing(LandingOutcome.NOT_APPROVED)
        return await _advance(ctx, number, state, await _pull(ctx, number))


async def _advance(
    ctx: RepoScope, number: int, state: LandingState, pull: Mapping[str, Any]
) -> Landing:
    if pull.get("merged"):
        await record_landed(ctx.store, ctx.repo, state.pin, number, ctx.clock())
        return Landing(LandingOutcome.ALREADY_MERGED)
    if pull["state"] != "open":
        return Landing(LandingOutcome.CLOSED)
    head = str(pull["head"]["sha"])
    if head != state.approved_head:
        return await _void(ctx, number, state, head, pull)
    if state.stopped_for == head:
        return Landing(LandingOutcome.LEFT_TO_HUMANS)
    if state.auto_merge_for != head and await _allows_auto_merge(ctx):
        await _enable_auto_merge(ctx, number, state, pull)
    builds: list[FoundBuild] = []
    if ctx.config.buildkite is not None and ctx.bk is not None:
        builds = await head_builds(ctx.bk, ctx.config.buildkite, number, head)
    failed = [found for found in builds if found.build.get("state") == FAILED]
    # A build with a failure of its own first: one failed only by jobs that never ran
    # just waits (see _failed_build), which must not hide another pipeline's failure.
    failed.sort(key=_failed_only_by_jobs_that_never_ran)
    if failed:
        # Failed before this call (e.g. before the approval): act on it now, not never.
        return await _failed_build(ctx, number, state, pull, failed[0])
    if state.auto_merge_for == head:
        return Landing(LandingOutcome.AUTO_MERGE, head[:7])
    waiting = await _not_green(ctx, head, builds)
    if waiting is not None:
        return Landing(LandingOutcome.WAITING, waiting)
    await _note_blocked_steps(ctx, number, head, builds)
    return await _merge(ctx, number, state, head)


async def _allows_auto_merge(ctx: RepoScope) -> bool:
    data = await ctx.gh.getitem("/repos/{owner}/{repo}", url_vars=ctx.repo.vars())
    return data.get("allow_auto_merge") is True


async def _enable_auto_merge(
    ctx: RepoScope, number: int, state: LandingState, pull: Mapping[str, Any]
) -> None:
    head = str(pull["head"]["sha"])
    try:
        await ctx.gh.graphql(
            ENABLE_AUTO_MERGE,
            pr=str(pull["node_id"]),
            method=GRAPHQL_METHODS[ctx.landing.merge_method],
            head=head,
        )
    except gidgethub.GraphQLException as exc:
        # E.g. the PR can merge right now ("clean status") or the branch has no
        # required checks: then the bot merges it itself once it is green.
        log.info("%s#%d: auto-merge not enabled: %s", ctx.repo.full_name, number, exc)
        return
    state.auto_merge_for = head
    await _save(ctx, number, state)


async def _not_green(ctx: RepoScope, head: str, builds: Sequence[FoundBuild]) -> str | None:
    """Why ``head`` is not ready to merge yet, or None when it is."""
    status = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/commits/{ref}/status", url_vars=ctx.repo.vars(ref=head)
    )
    # With no statuses at all GitHub says "pending"; there is nothing to wait for then.
    if int(status.get("total_count") or 0) > 0 and status.get("state") != SUCCESS:
        return f"combined status of {head[:7]} is {status.get('state')}"
    checks = await _check_runs_not_green(ctx, head)
    if checks is not None:
        return checks
    if ctx.config.buildkite is None or ctx.bk is None:
        return None
    if not builds:
        return f"no Buildkite build of {head[:7]} yet"
    for found in builds:
        policy = ctx.landing.blocked_builds
        if found.build.get("state") != PASSED and not blocked_build_is_green(found.build, policy):
            return f"Buildkite {found.pipeline} #{found.number} is {found.build.get('state')}"
    return None


async def _check_runs_not_green(ctx: RepoScope, head: str) -> str | None:
    """Why the check runs on ``head`` (GitHub Actions, other Apps) keep it from merging."""
    runs = [
        run
        async for run in ctx.gh.getiter(
            "/repos/{owner}/{repo}/commits/{ref}/check-runs{?per_page}",
            url_vars=ctx.repo.vars(ref=head, per_page="100"),
            iterable_key="check_runs",
        )
    ]
    return check_runs_not_green(runs, ctx.landing.required_checks)


def is_blocked(build: Mapping[str, Any]) -> bool:
    """A build stopped at a block step (Buildkite's ``blocked`` state or flag)."""
    return build.get("state") == BLOCKED or build.get("blocked") is True


def blocked_build_is_green(build: Mapping[str, Any], policy: str) -> bool:
    """A blocked build counts as green (config ``blocked_builds: green``) when every job
    that ran passed: what is blocked is optional work nobody asked for."""
    if policy != "green" or not is_blocked(build):
        return False
    return not any(job_states.is_hard_failure(job) for job in build.get("jobs") or [])


def blocked_steps(build: Mapping[str, Any]) -> list[str]:
    """The names of the steps a blocked build has not run (blocked, or waiting behind one)."""
    return [
        str(job.get("label") or job.get("name") or job.get("step_key") or job.get("id"))
        for job in build.get("jobs") or []
        if job_states.not_finished(job)
    ]


async def _note_blocked_steps(
    ctx: RepoScope, number: int, head: str, builds: Sequence[FoundBuild]
) -> None:
    """Before landing on a blocked build, say once which steps it leaves unrun."""
    rows = [
        f"- {found.pipeline} #{found.number}: {landing_text.code(blocked_steps(found.build))}"
        for found in builds
        if is_blocked(found.build)
    ]
    if rows:
        body = landing_text.LANDING_BLOCKED.format(head7=head[:7], rows="\n".join(rows))
        marker = landing_text.MARKER_BLOCKED.format(head=head)
        await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)


async def head_builds(
    bk: BuildkiteClient, where: BuildkiteConfig, number: int, head: str
) -> list[FoundBuild]:
    """In each pipeline, the newest Buildkite build of ``head`` for this PR (or its branch):
    landing waits for all of them."""
    org = where.organization
    found = []
    for pipeline in where.pipelines:
        for build in await bk.builds(org, pipeline, commit=head, per_page=10):
            pull_request = build.get("pull_request") or {}
            if str(pull_request.get("id")) == str(number) or str(
                build.get("branch") or ""
            ).startswith(bump_text.BRANCH_PREFIX):
                found.append(FoundBuild(org, pipeline, build))
                break
    return found


async def _merge(ctx: RepoScope, number: int, state: LandingState, head: str) -> Landing:
    async def merge() -> bool:
        await ctx.gh.put(
            "/repos/{owner}/{repo}/pulls/{number}/merge",
            url_vars=ctx.repo.vars(number=str(number)),
            data={"sha": head, "merge_method": ctx.landing.merge_method},
        )
        return True

    async def merged() -> bool | None:
        # A lost answer may hide a merge GitHub did make: the PR says.
        pull = await _pull(ctx, number)
        return True if pull.get("merged") and pull["head"]["sha"] == head else None

    try:
        await effects.look_after_failure(merge, merged)
    except gidgethub.BadRequest as exc:
        status = int(exc.status_code)
        if status == MERGE_NOT_ALLOWED:
            return Landing(LandingOutcome.NOT_MERGEABLE_YET)
        if status != MERGE_HEAD_MOVED:
            raise
        pull = await _pull(ctx, number)
        now = str(pull["head"]["sha"])
        if now == head:
            return Landing(LandingOutcome.CONFLICT)
        return await _void(ctx, number, state, now, pull)
    state.merged_sha = head
    await _save(ctx, number, state)
    await record_landed(ctx.store, ctx.repo, state.pin, number, ctx.clock())
    return Landing(LandingOutcome.MERGED, head[:7])


async def record_landed(store: Store, repo: Repo, pin: str | None, number: int, now: float) -> None:
    """Start the pin's cooldown (once per PR: a redelivery does not extend it)."""
    if pin is None:
        return
    key = pin_key(repo.full_name, pin)
    doc = dict(await store.get_state(Kind.PIN_COOLDOWN, key) or {})
    if doc.get("pr") == number:
        return
    doc.update(landed_at=now, pr=number)
    await store.put_state(Kind.PIN_COOLDOWN, key, doc)


# --- a new head --------------------------------------------------------------------------


async def on_new_head(ctx: RepoScope, number: int) -> Landing:
    """The PR's head moved (the bump flow updated it): an approval of the old head is void."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await _load(ctx, number)
        if state.approved_head is None:
            return Landing(LandingOutcome.NOT_APPROVED)
        pull = await _pull(ctx, number)
        head = str(pull["head"]["sha"])
        if head == state.approved_head or pull["state"] != "open":
            return Landing(LandingOutcome.APPROVAL_STANDS)
        return await _void(ctx, number, state, head, pull)


async def on_changes_requested(ctx: RepoScope, number: int, login: str) -> Landing:
    """A reviewer asked for changes: an approval the bot was landing on no longer stands."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await _load(ctx, number)
        old = state.approved_head
        if old is None:
            return Landing(LandingOutcome.NOT_APPROVED)
        body = landing_text.STOPPED_FOR_CHANGES.format(login=login, approved7=old[:7])
        await _withdraw(ctx, number, state, body, landing_text.MARKER_CHANGES.format(head=old))
        return Landing(LandingOutcome.CHANGES_REQUESTED, f"by {login} at {old[:7]}")


async def on_dismissed(ctx: RepoScope, number: int, review_id: int, login: str) -> Landing:
    """An approval was dismissed: if it is the one the bot is landing on, stop."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await _load(ctx, number)
        old = state.approved_head
        if old is None or state.review_id != review_id:
            return Landing(LandingOutcome.NOT_THE_APPROVAL)
        body = landing_text.STOPPED_FOR_DISMISSAL.format(login=login, approved7=old[:7])
        marker = landing_text.MARKER_DISMISSED.format(review=review_id)
        await _withdraw(ctx, number, state, body, marker)
        return Landing(LandingOutcome.DISMISSED, f"by {login} at {old[:7]}")


async def _withdraw(
    ctx: RepoScope, number: int, state: LandingState, body: str, marker: str
) -> None:
    """The approval no longer stands: forget it (auto-merge off too), then say so once."""
    old = state.approved_head
    state.approved_head = None
    if old is not None and state.auto_merge_for == old:
        state.auto_merge_for = None
        await _disable_auto_merge(ctx, number, await _pull(ctx, number))
    await _save(ctx, number, state)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)


async def _void(
    ctx: RepoScope, number: int, state: LandingState, head: str, pull: Mapping[str, Any]
) -> Landing:
    old = state.approved_head
    state.approved_head = None
    if old is not None and state.auto_merge_for == old:
        # GitHub keeps auto-merge on after a push by someone with write access (the bot).
        state.auto_merge_for = None
        await _disable_auto_merge(ctx, number, pull)
    if state.reapproval_for == head:
        await _save(ctx, number, state)
        return Landing(LandingOutcome.REAPPROVAL_REQUESTED, "already")
    state.reapproval_for = head
    body = landing_text.REAPPROVAL_NEEDED.format(head7=head[:7], approved7=str(old or "?")[:7])
    marker = landing_text.MARKER_REAPPROVE.format(head=head)
    # Posted before the state says so: a failed post is retried, not forgotten.
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    await _save(ctx, number, state)
    return Landing(LandingOutcome.REAPPROVAL_REQUESTED, f"{str(old)[:7]} void at {head[:7]}")


async def _disable_auto_merge(ctx: RepoScope, number: int, pull: Mapping[str, Any]) -> None:
    if not pull.get("auto_merge"):
        return  # GitHub turned it off already
    try:
        await ctx.gh.graphql(DISABLE_AUTO_MERGE, pr=str(pull["node_id"]))
    except gidgethub.GraphQLException as exc:
        log.warning("%s#%d: auto-merge not disabled: %s", ctx.repo.full_name, number, exc)


# --- a finished build --------------------------------------------------------------------


async def on_bump_build(
    ctx: RepoScope, branch: str, pipeline: str, number: int
) -> tuple[int, Landing] | None:
    """A build of a bump branch finished in a configured pipeline: act on it for that
    branch's open bump PR; (the PR's number, what was done), or None without one."""
    where = ctx.config.buildkite
    pull = await open_bump_pull(ctx.gh, ctx.repo, branch, ctx.bot_login)
    if where is None or pull is None:
        return None
    # The webhook's build has no jobs; the flow needs them, so read the build itself.
    build = await ctx.buildkite.build(where.organization, pipeline, number)
    found = FoundBuild(where.organization, pipeline, build)
    return int(pull["number"]), await on_build_finished(ctx, int(pull["number"]), found)


async def on_build_finished(ctx: RepoScope, number: int, found: FoundBuild) -> Landing:
    """A Buildkite build of the PR finished: land on green, retry what is flaky, else stop."""
    async with ctx.locks.hold(pr_lock(ctx.repo, number)):
        state = await _load(ctx, number)
        if state.approved_head is None:
            return Landing(LandingOutcome.NOT_APPROVED)
        pull = await _pull(ctx, number)
        head = str(pull["head"]["sha"])
        if str(found.build.get("commit")) != head or head != state.approved_head:
            return await _advance(ctx, number, state, pull)
        if state.stopped_for == head:
            return Landing(LandingOutcome.LEFT_TO_HUMANS)
        if found.build.get("state") == PASSED or is_blocked(found.build):
            return await _advance(ctx, number, state, pull)
        if found.build.get("state") != FAILED:
            return Landing(
                LandingOutcome.NOTHING_TO_DO, f"build #{found.number} {found.build.get('state')}"
            )
        return await _failed_build(ctx, number, state, pull, found)


async def _failed_build(
    ctx: RepoScope,
    number: int,
    state: LandingState,
    pull: Mapping[str, Any],
    found: FoundBuild,
) -> Landing:
    head = str(pull["head"]["sha"])
    failed = hard_failures(found.build)
    if _failed_only_by_jobs_that_never_ran(found):
        # The build failed, yet none of its jobs failed by itself: all that stands in the
        # way is jobs that never ran (broken: a failed dependency or a condition kept the
        # step out; skipped; canceled before they started). A retry would not run them, so
        # this is no flaky failure to retry; nothing failed, so nothing to leave the head
        # to humans for; but a required step that did not run is not green either. So
        # landing neither retries, nor stops, nor merges: it waits with the approval
        # standing, and a newer build of the head that passes (a rebuild) lands it.
        names = ", ".join(
            str(job.get("name") or job.get("step_key") or job.get("id"))
            for job in found.build.get("jobs") or []
            if not job.get("retried") and job_states.never_ran(job)
        )
        return Landing(
            LandingOutcome.WAITING, WAITING_NEVER_RAN.format(number=found.number, names=names)
        )
    seen = f"{found.key}:" + ",".join(sorted(str(job["id"]) for job in failed))
    if seen in state.seen_failures:
        return Landing(LandingOutcome.HANDLED_ALREADY)
    runs = state.handling.get(seen)
    if runs is None:
        # Counted before acting: a redelivery or a crash never buys the head an extra
        # attempt. It is marked handled only once acted on, so a crash in between
        # finishes the job on the rerun (with this same count) instead of losing it.
        runs = state.failed_runs.get(head, 0) + 1
        state.failed_runs[head] = runs
        state.handling = {seen: runs}
        await _save(ctx, number, state)
    outcome = await _act_on_failure(ctx, number, state, pull, found, failed, runs)
    state.seen_failures.append(seen)
    state.handling = {}
    await _save(ctx, number, state)
    return outcome


def _failed_only_by_jobs_that_never_ran(found: FoundBuild) -> bool:
    return job_states.failed_only_by_jobs_that_never_ran(found.build.get("jobs") or [])


async def _act_on_failure(
    ctx: RepoScope,
    number: int,
    state: LandingState,
    pull: Mapping[str, Any],
    found: FoundBuild,
    failed: list[dict[str, Any]],
    runs: int,
) -> Landing:
    head = str(pull["head"]["sha"])
    limit = ctx.config.retry.max_failed_jobs
    if len(failed) > limit:
        rows = [_plain_row(job) for job in failed]
        return await _stop(ctx, number, state, pull, landing_text.TOO_MANY_FAILED, found, rows)
    retry_ctx = ctx
    # The retry-flaky classifier, as is: landing must call a failure flaky exactly
    # when `@bot retry-flaky` would.
    decided = await retry_flow.classify_failures(retry_ctx, found, failed, head)
    rows = [_row(job, verdict) for job, verdict in decided]
    real = [row for row, (_job, verdict) in zip(rows, decided, strict=True) if not verdict.retry]
    if real or not failed:
        return await _stop(ctx, number, state, pull, landing_text.REAL_FAILURE, found, real)
    if not may_retry(runs):
        return await _stop(ctx, number, state, pull, landing_text.ATTEMPTS_EXHAUSTED, found, rows)
    retried = 0
    for row in rows:
        retried += await _retry(ctx, number, found, row, attempt=runs + 1, head=head)
    if retried == 0:
        return await _stop(ctx, number, state, pull, landing_text.NOT_RETRYABLE, found, rows)
    return Landing(
        LandingOutcome.RETRIED, f"{retried} job(s) of build #{found.number}, attempt {runs + 1}"
    )


def _bk(ctx: RepoScope) -> BuildkiteClient:
    assert ctx.bk is not None, "a finished build arrives only when Buildkite is configured"
    return ctx.bk


def _plain_row(job: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "job_id": str(job["id"]),
        "name": str(job.get("name") or job.get("step_key") or job["id"]),
        "url": str(job.get("web_url") or ""),
        "step_key": job.get("step_key"),
        "class": str(job.get("state")),
        "evidence": f"exit status {job.get('exit_status')}",
        "rule": None,
    }


def _row(job: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    row = _plain_row(job)
    row.update(
        {"class": verdict.failure_class.value, "evidence": verdict.evidence, "rule": verdict.rule}
    )
    return row


async def _retry(
    ctx: RepoScope,
    number: int,
    found: FoundBuild,
    row: dict[str, Any],
    *,
    attempt: int,
    head: str,
) -> int:
    """Retry one job (1) or learn it cannot be (0); recorded like retry-flaky's retries."""
    step_key = f"{found.key}/{row.get('step_key') or row['job_id']}"
    # Counted like retry-flaky's retries, so its per-step cap sees them.
    new = await retry_flow.retry_counted(_bk(ctx), ctx.store, found, row["job_id"], step_key)
    if isinstance(new, str):
        log.info("%s#%d: %s not retried: %s", ctx.repo.full_name, number, row["name"], new)
        return 0
    await ctx.store.put_state(
        Kind.RETRY_JOB,
        str(new["id"]),
        {
            "repo": ctx.repo.full_name,
            "pr": number,
            "original_job_id": row["job_id"],
            "step_key": row.get("step_key"),
            "name": row["name"],
            "class": row["class"],
            "rule": row.get("rule"),
            "evidence": row["evidence"],
            "requested_by": ctx.bot_login,
            "reason": landing_text.RETRY_REASON.format(head7=head[:7], attempt=attempt),
            "forced": False,
            "build": found.key,
            "outcome": None,
            "at": ctx.clock(),
            "source": "landing",
        },
    )
    return 1


async def _stop(
    ctx: RepoScope,
    number: int,
    state: LandingState,
    pull: Mapping[str, Any],
    template: str,
    found: FoundBuild,
    rows: list[dict[str, Any]],
) -> Landing:
    """Leave the head to humans, with one comment that lists the failing jobs."""
    head = str(pull["head"]["sha"])
    state.stopped_for = head
    if state.auto_merge_for == head:
        state.auto_merge_for = None
        await _disable_auto_merge(ctx, number, pull)
    body = template.format(
        build=found.number,
        build_url=str(found.build.get("web_url") or ""),
        head7=head[:7],
        count=len(hard_failures(found.build)),
        limit=ctx.config.retry.max_failed_jobs,
        attempts=state.failed_runs.get(head, 0),
        rows=landing_text.failing_rows(rows),
    )
    marker = landing_text.MARKER_STOPPED.format(head=head)
    # Posted before the state says so: a failed post is retried, not forgotten.
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    await _save(ctx, number, state)
    return Landing(LandingOutcome.STOPPED, head[:7])


async def open_bump_pull(
    gh: GitHubAPI, repo: Repo, branch: str, bot_login: str
) -> dict[str, Any] | None:
    """The bot's open bump PR on ``branch``, if any."""
    for pull in await changes.pulls_for_branch(gh, repo, branch):
        if pull["state"] == "open" and is_bot_bump(pull, bot_login):
            return pull
    return None
