"""A main build finished: which steps are broken now, and their follow-ups kept.

Level-triggered per step: the finished main builds (one listing) say each step's
streak; a step whose newest run is red has the logs of its few judged runs read once
and is judged (``signals.judge``). Only a change of state writes to GitHub:

- broken (a new episode, or one whose follow-ups a crash left unfinished): the culprit
  search, the partial revert PR when the culprit re-routed the step, the issue, and one
  comment on the culprit's PR — each recorded once the server confirmed it;
- green again after being broken: the issue closed with a comment, the revert PR closed
  if it is still open;
- anything else (red once, flaky, unknown): recorded for `why-red` and the dashboard.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import gidgethub

from bot.buildkite import job_states
from bot.buildkite.errors import JobNotRetryable
from bot.github import changes, effects
from bot.github.default_branch import default_branch_name
from bot.github.issues import edit_issue, open_issue_once
from bot.images.check import check_build
from bot.images.text import image_table
from bot.main_red import state as signal_state
from bot.main_red import text
from bot.main_red.reads import evidence_of, main_builds, signatures_of
from bot.main_red.revert_pr import Revert, plan_revert, propose
from bot.main_red.signals import (
    SignalState,
    StepId,
    StepRun,
    StepSignal,
    first_red,
    judge,
    red_streak,
    runs_to_read,
    timelines,
)
from bot.main_red.state import SignalDoc
from bot.main_red.suspects import Suspects, find_suspects
from bot.retry.classify import FailureClass
from bot.service.build_scope import BuildScope
from bot.service.scope import RepoScope
from bot.store.kinds import signal_key

log = logging.getLogger(__name__)

BROKEN = SignalState.BROKEN.value
CONFIRMING = "confirming: the first red job retried once"
GREEN = SignalState.GREEN.value


@dataclass(frozen=True)
class StepOutcome:
    step: str
    state: str
    action: str  # what was written, or "unchanged"


@dataclass(frozen=True)
class Where:
    org: str
    pipeline: str
    branch: str


def watched(ctx: RepoScope, key: str) -> bool:
    globs = ctx.config.main_red.steps if ctx.config.main_red else ("*",)
    return any(fnmatchcase(key, glob) for glob in globs)


async def main_build_finished(found: BuildScope) -> list[StepOutcome]:
    """A build of a configured pipeline finished: judged when it is a watched pipeline's
    build of the default branch (other builds are no signal of main)."""
    scope = found.scope
    config = scope.config.main_red
    if config is None or (config.pipelines and found.pipeline not in config.pipelines):
        return []
    if found.branch != await default_branch_name(scope.gh, scope.store, scope.repo):
        return []
    where = Where(found.org, found.pipeline, found.branch)
    finished_at = str(found.build.get("finished_at") or "")
    return await on_main_build(scope, where, found.number, finished_at=finished_at)


async def on_main_build(
    ctx: RepoScope, where: Where, number: int, *, finished_at: str = ""
) -> list[StepOutcome]:
    """Every watched step of ``where``'s main builds, after build ``number`` finished."""
    builds = await main_builds(
        ctx, where.org, where.pipeline, where.branch, newest=number, finished_at=finished_at
    )
    by_number = {int(b.get("number") or 0): b for b in builds}
    outcomes = []
    for step, runs in sorted(timelines(builds).items(), key=lambda item: str(item[0])):
        if not watched(ctx, step.key):
            continue
        outcome = await _one_step(ctx, where, step, runs, by_number)
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes


async def _one_step(
    ctx: RepoScope,
    where: Where,
    step: StepId,
    runs: Sequence[StepRun],
    builds: Mapping[int, Mapping[str, Any]],
) -> StepOutcome | None:
    name = str(step)
    newest = runs[0]
    key = signal_key(ctx.repo, where.pipeline, name)
    if newest.passed:
        # Most steps, most of the time: nothing to read, nothing stored for them.
        doc = await signal_state.load(ctx, where.pipeline, name)
        if doc.state == GREEN or (doc.closed and doc.state == GREEN):
            return None
        async with ctx.locks.hold(key):
            return await _green_again(ctx, where, name, newest, doc)
    streak = red_streak(runs)
    doc = await signal_state.load(ctx, where.pipeline, name)
    if doc.state == BROKEN and doc.since == streak[-1].build_number and doc.complete:
        return StepOutcome(name, BROKEN, "unchanged")
    evidence, classes = await evidence_of(
        ctx, where.org, where.pipeline, step.key, runs_to_read(runs)
    )
    signal = judge(step, runs, evidence)
    async with ctx.locks.hold(key):
        doc = await signal_state.load(ctx, where.pipeline, name)
        if signal.state is not SignalState.BROKEN:
            return await _record(ctx, where, name, signal, doc)
        if not await confirmed(ctx, where, signal, builds, doc):
            await signal_state.save(ctx, where.pipeline, name, doc)
            return StepOutcome(name, signal.state.value, CONFIRMING)
        images = None
        if FailureClass.IMAGE_MISSING in classes.values():
            red = first_red(signal)
            build = builds.get(red.build_number) if red is not None else None
            images = image_table(await check_build(ctx, build)) if build else None
        return await _broken(ctx, where, step, signal, doc, signatures_of(evidence), images)


async def confirmed(
    ctx: RepoScope,
    where: Where,
    signal: StepSignal,
    builds: Mapping[int, Mapping[str, Any]],
    doc: SignalDoc,
) -> bool:
    """With ``main_red.confirm``: the first red job retried once (never more), and its
    retry finished failing. A retry that passed is seen by the judgement itself (the run
    passed on retry: not broken), so only "failed again" or "cannot retry" get here."""
    config = ctx.config.main_red
    first = first_red(signal)
    if config is None or not config.confirm or first is None:
        return True
    state = doc.extra.get("confirm") or {}
    if state.get("build") == first.build_number and state.get("done"):
        return True
    jobs = list((builds.get(first.build_number) or {}).get("jobs") or ())
    original: Mapping[str, Any] = next(
        (job for job in jobs if str(job.get("id")) == first.job_id), {}
    )
    retry_id = original.get("retried_in_job_id") or state.get("retry")
    if not retry_id:
        try:
            new = await ctx.buildkite.retry_job(
                where.org, where.pipeline, first.build_number, first.job_id
            )
        except JobNotRetryable as exc:
            doc.extra["confirm"] = {"build": first.build_number, "done": True, "note": exc.message}
            return True
        # Recorded once Buildkite confirmed it: a rerun sees the retry (here or on the
        # original job's ``retried_in_job_id``) and never retries again.
        doc.extra["confirm"] = {"build": first.build_number, "retry": str(new["id"])}
        return False
    retried = next((job for job in jobs if str(job.get("id")) == str(retry_id)), None)
    if retried is None or not (
        retried.get("state") == job_states.PASSED or job_states.ran_and_failed(retried)
    ):
        doc.extra["confirm"] = {"build": first.build_number, "retry": str(retry_id)}
        return False  # still running: its build finishing again brings it here
    doc.extra["confirm"] = {"build": first.build_number, "retry": str(retry_id), "done": True}
    return True


async def _record(
    ctx: RepoScope, where: Where, name: str, signal: StepSignal, doc: SignalDoc
) -> StepOutcome:
    if doc.state == BROKEN:
        # A broken episode stays open until the step passes: a flaky or unreadable run
        # in the middle of it says nothing about the fix.
        return StepOutcome(name, BROKEN, "unchanged")
    if (doc.state, doc.reason) != (signal.state.value, signal.reason):
        doc.state, doc.reason = signal.state.value, signal.reason
        await signal_state.save(ctx, where.pipeline, name, doc)
    return StepOutcome(name, signal.state.value, "recorded")


async def _broken(
    ctx: RepoScope,
    where: Where,
    step: StepId,
    signal: StepSignal,
    doc: SignalDoc,
    signatures: dict[str, str],
    images: str | None,
) -> StepOutcome:
    name = str(step)
    first, green = first_red(signal), signal.last_green
    assert first is not None
    assert green is not None  # judged broken
    if doc.since != first.build_number:  # a new episode: nothing of the last one applies
        doc = SignalDoc(extra=doc.extra, since=first.build_number)
    doc.state, doc.reason, doc.closed, doc.complete = BROKEN, signal.reason, False, False
    doc.last_green = green.build_number
    await signal_state.save(ctx, where.pipeline, name, doc)

    async def save(updated: SignalDoc) -> None:
        await signal_state.save(ctx, where.pipeline, name, updated)

    suspects = await find_suspects(ctx, step.key, green, first, branch=where.branch)
    culprit = suspects.ranking.culprit
    doc.culprit = culprit.commit.sha if culprit is not None else None
    notes = list(suspects.notes)
    pull = await culprit_pull(ctx, suspects, notes)
    planned = await _plan(ctx, where, step, suspects)
    if isinstance(planned, str):
        doc.revert_note = planned
    fix = _fix_text(planned, suspects)

    def body_with(fix: str) -> str:
        return text.issue_body(
            pipeline=where.pipeline,
            step=name,
            signal=signal,
            first=first,
            signatures=signatures,
            before=suspects.before,
            after=suspects.after,
            ranking=suspects.ranking,
            changes=suspects.changes,
            fix=fix,
            images=images,
            notes=notes,
        )

    title = text.issue_title(name, first)
    await _issue(ctx, where, name, first, doc, title, body_with(fix), save)
    if isinstance(planned, Revert):
        final = await _revert(ctx, step, signal, doc, suspects, planned, save)
        await edit_issue(ctx.gh, ctx.repo, _number(doc.issue), body=body_with(final))
    if pull is not None:
        await _comment_culprit(ctx, where, name, first, suspects, doc, pull)
    doc.complete = True
    await save(doc)
    action = f"issue #{doc.issue}" + (f", revert #{doc.revert_pr}" if doc.revert_pr else "")
    return StepOutcome(name, BROKEN, action)


def _number(issue: int | None) -> int:
    assert issue is not None  # opened just before
    return issue


async def _plan(
    ctx: RepoScope, where: Where, step: StepId, suspects: Suspects
) -> Revert | str | None:
    """The partial revert to propose; a note saying why there is none; or None when the
    culprit did not re-route the step (or reverts are off)."""
    culprit = suspects.ranking.culprit
    config = ctx.config.main_red
    if culprit is None or not suspects.changes or (config is not None and not config.revert):
        return None
    if not suspects.trusted:
        return None  # the notes say why
    return await plan_revert(ctx, step.key, culprit.commit.sha, suspects, branch=where.branch)


def _fix_text(planned: Revert | str | None, suspects: Suspects) -> str:
    if isinstance(planned, Revert):
        return text.FIX_REVERT_OPENING
    if isinstance(planned, str):
        return text.FIX_REVERT_FAILED.format(reason=planned)
    if not suspects.trusted:
        return text.FIX_UNTRUSTED
    if suspects.ranking.culprit is not None and suspects.changes:
        return text.FIX_REVERT_OFF
    return text.FIX_NO_REVERT_CODE


async def _revert(
    ctx: RepoScope,
    step: StepId,
    signal: StepSignal,
    doc: SignalDoc,
    suspects: Suspects,
    planned: Revert,
    save: Callable[[SignalDoc], Awaitable[None]],
) -> str:
    """Open (or keep) the revert PR; the issue's final "Fix" text."""
    first, green = first_red(signal), signal.last_green
    assert first is not None
    assert green is not None
    assert doc.issue is not None
    body = text.revert_body(
        step=step.key,
        first=first,
        green=green,
        culprit=text.short(planned.culprit),
        keys=planned.keys,
        issue=doc.issue,
        after=suspects.after,
        restored=planned.restored,
    )
    title = text.revert_title(step.key, planned.culprit)
    outcome = await propose(ctx, planned, doc, title=title, body=body, save=save)
    if outcome.pr is None:
        doc.revert_note = outcome.note
        return text.FIX_REVERT_FAILED.format(reason=outcome.note)
    return text.fix_revert(outcome.pr, planned.keys, green.commit)


async def _issue(
    ctx: RepoScope,
    where: Where,
    name: str,
    first: StepRun,
    doc: SignalDoc,
    title: str,
    body: str,
    save: Callable[[SignalDoc], Awaitable[None]],
) -> None:
    marker = text.MARKER_ISSUE.format(pipeline=where.pipeline, step=name, since=first.build_number)
    labels = ctx.config.main_red.labels if ctx.config.main_red else ()
    if doc.issue is None:
        look_first = bool(doc.extra.get("issue_pending"))
        doc.extra["issue_pending"] = True  # recorded first: a rerun looks before creating
        await save(doc)
        doc.issue = await open_issue_once(
            ctx.gh,
            ctx.repo,
            title=title,
            body=body,
            marker=marker,
            labels=labels,
            bot_login=ctx.bot_login,
            look_first=look_first,
        )
        doc.extra.pop("issue_pending", None)
        await save(doc)
    else:
        await edit_issue(ctx.gh, ctx.repo, doc.issue, title=title, body=body)


async def culprit_pull(ctx: RepoScope, suspects: Suspects, notes: list[str]) -> int | None:
    """The PR that merged the culprit, checked: the number in a subject is only a claim
    (it may name an issue, or another repository's PR)."""
    culprit = suspects.ranking.culprit
    if culprit is None or not suspects.trusted:
        return None
    sha7 = text.short(culprit.commit.sha)
    number = culprit.commit.pull_number
    if number is None:
        notes.append(text.NOTE_NO_PULL.format(commit7=sha7))
        return None
    try:
        pull = await ctx.gh.getitem(
            "/repos/{owner}/{repo}/pulls/{number}", url_vars=ctx.repo.vars(number=str(number))
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) != 404:
            raise
        notes.append(text.NOTE_NOT_A_PULL.format(commit7=sha7, number=number))
        return None
    if pull.get("merge_commit_sha") != culprit.commit.sha:
        notes.append(text.NOTE_NOT_A_PULL.format(commit7=sha7, number=number))
        return None
    return number


async def _comment_culprit(
    ctx: RepoScope,
    where: Where,
    name: str,
    first: StepRun,
    suspects: Suspects,
    doc: SignalDoc,
    pull: int,
) -> None:
    assert doc.issue is not None
    body = text.COMMENT_CULPRIT.format(
        step=name,
        confidence=suspects.ranking.confidence.value,
        why=suspects.ranking.why,
        first=f"#{first.build_number}",
        issue=doc.issue,
    )
    marker = text.MARKER_CULPRIT.format(pipeline=where.pipeline, step=name)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, pull, body, marker)
    doc.comment_posted = True


async def _green_again(
    ctx: RepoScope, where: Where, name: str, run: StepRun, doc: SignalDoc
) -> StepOutcome:
    if doc.state == BROKEN and not doc.closed:
        since = doc.since or 0
        if doc.issue is not None:
            body = text.COMMENT_GREEN.format(
                step=name, build=f"#{run.build_number}", commit7=text.short(run.commit)
            )
            marker = text.MARKER_GREEN.format(pipeline=where.pipeline, step=name, since=since)
            await effects.post_once(ctx.gh, ctx.store, ctx.repo, doc.issue, body, marker)
            await edit_issue(ctx.gh, ctx.repo, doc.issue, state="closed")
        if doc.revert_pr is not None:
            await _close_revert(ctx, name, run, doc, since)
    doc.state, doc.reason, doc.closed = GREEN, "", True
    doc.last_green = run.build_number
    await signal_state.save(ctx, where.pipeline, name, doc)
    return StepOutcome(name, GREEN, "closed")


async def _close_revert(
    ctx: RepoScope, name: str, run: StepRun, doc: SignalDoc, since: int
) -> None:
    assert doc.revert_pr is not None
    pull = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}",
        url_vars=ctx.repo.vars(number=str(doc.revert_pr)),
    )
    if pull.get("state") != "open":
        return  # merged (that is how it went green) or closed by someone
    body = text.COMMENT_REVERT_DONE.format(step=name, build=f"#{run.build_number}")
    marker = text.MARKER_REVERT_DONE.format(step=name, since=since)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, doc.revert_pr, body, marker)
    await changes.update_pull(ctx.gh, ctx.repo, doc.revert_pr, state="closed")
