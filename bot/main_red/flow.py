"""A main build finished: which steps are broken now, and their follow-ups kept.

Level-triggered per lane and step: the finished main builds (one listing) are split into
main's lanes (``lanes``: the regular builds, the torch-nightly ones, the config's), and
each lane's builds say each step's streak in that lane; a step whose newest run is red
has the logs of its few judged runs read once and is judged (``signals.judge``). A lane
whose newest build's red steps all failed pulling a missing image gets one issue for
them (``lane_images``) instead. Only a change of state writes to GitHub:

- broken (a new episode, or one whose follow-ups a crash left unfinished): the culprit
  search, the partial revert PR when the culprit re-routed the step, the issue, and one
  comment on the culprit's PR — each recorded once the server confirmed it;
- green again after being broken: the issue closed with a comment, the revert PR closed
  if it is still open;
- anything else (red once, flaky, unknown): recorded for `why-red` and the dashboard.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from bot.context.build_scope import BuildScope
from bot.context.scope import RepoScope
from bot.failures.classify import FailureClass
from bot.github.default_branch import default_branch_name
from bot.github.issues import edit_issue
from bot.images.check import check_build
from bot.images.text import image_table
from bot.main_red import state as signal_state
from bot.main_red import text
from bot.main_red.confirm import CONFIRMING, confirmed
from bot.main_red.follow_ups import close_episode, comment_culprit, culprit_pull, write_issue
from bot.main_red.lane_images import IMAGES_STEP, images_episode
from bot.main_red.lane_suspects import lane_suspects, same_commit
from bot.main_red.lanes import REGULAR, Lane, by_lane, lanes_of
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
from bot.main_red.suspects import Suspects
from bot.store.kinds import Kind, signal_key

log = logging.getLogger(__name__)

BROKEN = SignalState.BROKEN.value
GREEN = SignalState.GREEN.value


@dataclass(frozen=True)
class StepOutcome:
    step: str  # ``<step>@<lane>`` for a lane other than the regular one, as in its key
    state: str
    action: str  # what was written, or "unchanged"


@dataclass(frozen=True)
class Where:
    org: str
    pipeline: str
    branch: str
    lane: Lane = REGULAR

    def outcome(self, name: str, state: str, action: str) -> StepOutcome:
        shown = f"{name}@{self.lane.tag}" if self.lane.tag else name
        return StepOutcome(shown, state, action)


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
    """Every watched step of each lane of ``where``'s main builds, after build ``number``
    finished."""
    builds = await main_builds(
        ctx, where.org, where.pipeline, where.branch, newest=number, finished_at=finished_at
    )
    by_number = {int(b.get("number") or 0): b for b in builds}
    # One read of every stored signal, instead of one per step: a main build has some
    # 200 steps, nearly all green and never stored.
    stored = {key for key, _doc in await ctx.store.list_state(Kind.MAIN_SIGNAL)}
    outcomes = []
    for lane, found in by_lane(builds, lanes_of(ctx.config.main_red)).items():
        in_lane = dataclasses.replace(where, lane=lane)
        outcomes += await _one_lane(ctx, in_lane, found, by_number, stored)
    return outcomes


async def _one_lane(
    ctx: RepoScope,
    where: Where,
    builds: Sequence[Mapping[str, Any]],
    by_number: Mapping[int, Mapping[str, Any]],
    stored: set[str],
) -> list[StepOutcome]:
    lines = {step: runs for step, runs in timelines(builds).items() if watched(ctx, step.key)}
    action, covered = await images_episode(
        ctx, where.org, where.pipeline, where.lane, lines, by_number
    )
    outcomes = []
    if action is not None:
        state = GREEN if action == "closed" else BROKEN
        outcomes.append(where.outcome(IMAGES_STEP, state, action))
    for step, runs in sorted(lines.items(), key=lambda item: str(item[0])):
        if step in covered:
            continue  # the lane's images issue speaks for it
        key = signal_key(ctx.repo, where.pipeline, str(step), where.lane.tag)
        if runs[0].passed and key not in stored:
            continue  # green and never red: nothing to read, nothing to write
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
    lane = where.lane.tag
    key = signal_key(ctx.repo, where.pipeline, name, lane)
    if newest.passed:
        async with ctx.locks.hold(key):
            doc = await signal_state.load(ctx, where.pipeline, name, lane)
            if doc.state == GREEN:
                return None
            await close_episode(ctx, where.pipeline, where.lane, name, newest, doc)
            doc.state, doc.reason, doc.closed = GREEN, "", True
            doc.last_green = newest.build_number
            await signal_state.save(ctx, where.pipeline, name, doc, lane)
            return where.outcome(name, GREEN, "closed")
    streak = red_streak(runs)
    doc = await signal_state.load(ctx, where.pipeline, name, lane)
    if doc.state == BROKEN and doc.since == streak[-1].build_number and doc.complete:
        return where.outcome(name, BROKEN, "unchanged")
    evidence, classes = await evidence_of(
        ctx, where.org, where.pipeline, step.key, runs_to_read(runs)
    )
    signal = judge(step, runs, evidence)
    async with ctx.locks.hold(key):
        doc = await signal_state.load(ctx, where.pipeline, name, lane)
        if signal.state is not SignalState.BROKEN:
            return await _record(ctx, where, name, signal, doc)
        if not await confirmed(ctx, where.org, where.pipeline, signal, builds, doc):
            await signal_state.save(ctx, where.pipeline, name, doc, lane)
            return where.outcome(name, signal.state.value, CONFIRMING)
        images = None
        if FailureClass.IMAGE_MISSING in classes.values():
            red = first_red(signal)
            build = builds.get(red.build_number) if red is not None else None
            images = image_table(await check_build(ctx, build)) if build else None
        return await _broken(ctx, where, step, signal, doc, signatures_of(evidence), images)


async def _record(
    ctx: RepoScope, where: Where, name: str, signal: StepSignal, doc: SignalDoc
) -> StepOutcome:
    if doc.state == BROKEN:
        # A broken episode stays open until the step passes: a flaky or unreadable run
        # in the middle of it says nothing about the fix.
        return where.outcome(name, BROKEN, "unchanged")
    if (doc.state, doc.reason) != (signal.state.value, signal.reason):
        doc.state, doc.reason = signal.state.value, signal.reason
        await signal_state.save(ctx, where.pipeline, name, doc, where.lane.tag)
    return where.outcome(name, signal.state.value, "recorded")


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
    await signal_state.save(ctx, where.pipeline, name, doc, where.lane.tag)

    async def save(updated: SignalDoc) -> None:
        await signal_state.save(ctx, where.pipeline, name, updated, where.lane.tag)

    suspects = await lane_suspects(ctx, where.lane, step.key, green, first, branch=where.branch)
    culprit = suspects.ranking.culprit
    doc.culprit = culprit.commit.sha if culprit is not None else None
    notes = list(suspects.notes)
    pull = await culprit_pull(ctx, suspects, notes)
    planned = await _plan(ctx, where, step, suspects)
    if isinstance(planned, str):
        doc.revert_note = planned
    fix = _fix_text(planned, suspects, where.lane, same=same_commit(green, first))

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
            lane=where.lane,
        )

    title = text.issue_title(name, first, where.lane)
    marker = text.issue_marker(where.pipeline, name, first.build_number, where.lane)
    await write_issue(ctx, marker, doc, title, body_with(fix), save)
    if isinstance(planned, Revert):
        final = await _revert(ctx, step, signal, doc, suspects, planned, save)
        await edit_issue(ctx.gh, ctx.repo, _number(doc.issue), body=body_with(final))
    if pull is not None:
        await comment_culprit(ctx, where.pipeline, where.lane, name, first, suspects, doc, pull)
    doc.complete = True
    await save(doc)
    action = f"issue #{doc.issue}" + (f", revert #{doc.revert_pr}" if doc.revert_pr else "")
    return where.outcome(name, BROKEN, action)


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
    if not where.lane.regular:
        return None  # one revert branch per step: the regular lane's (the fix says so)
    if not suspects.trusted:
        return None  # the notes say why
    return await plan_revert(ctx, step.key, culprit.commit.sha, suspects, branch=where.branch)


def _fix_text(planned: Revert | str | None, suspects: Suspects, lane: Lane, *, same: bool) -> str:
    if isinstance(planned, Revert):
        return text.FIX_REVERT_OPENING
    if isinstance(planned, str):
        return text.FIX_REVERT_FAILED.format(reason=planned)
    if same:
        return text.FIX_SAME_COMMIT
    if not suspects.trusted:
        return text.FIX_UNTRUSTED
    if suspects.ranking.culprit is not None and suspects.changes:
        return (
            text.FIX_REVERT_OFF if lane.regular else text.FIX_LANE_NO_REVERT.format(lane=lane.name)
        )
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
