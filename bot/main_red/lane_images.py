"""One issue for a lane of main whose red steps all failed pulling their image.

When an image build pushes the wrong tag (incident B: the CPU build pushed ``-cpu`` on
the torch-nightly lane, whose steps pull ``-torch-nightly-cpu``), every step that pulls
the tag fails, each with its own log: one issue per step would be a dozen issues about
one cause. So when every watched step that failed in a lane's newest build says the
registry has no manifest for its image, and the registry confirms a tag is missing (the
proof: a log alone could be a registry's bad moment), the lane gets one issue with the
registry's table for that episode, and those steps are judged no further. The episode
ends when every step it named passes again in its newest run of the lane: the issue is
closed once, with a word.

The episode is a store document like a step's (``IMAGES_STEP``, the lane's key), opened
and closed with the same exactly-once writes as a step's issue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.context.scope import RepoScope
from bot.failures.classify import FailureClass
from bot.images.check import check_build
from bot.images.model import ImageCheck
from bot.images.text import image_table
from bot.main_red import images_text
from bot.main_red import state as signal_state
from bot.main_red.follow_ups import close_images, write_issue
from bot.main_red.lanes import Lane
from bot.main_red.reads import judge_run, log_lines
from bot.main_red.signals import SignalState, StepId, StepRun
from bot.main_red.state import SignalDoc
from bot.store.kinds import signal_key

# The store key's step for a lane's images episode: Buildkite step keys have no parentheses.
IMAGES_STEP = "(images)"
REASON_IMAGES = "every red step of build #{number} failed pulling its image"
BROKEN = SignalState.BROKEN.value
GREEN = SignalState.GREEN.value

Lines = Mapping[StepId, Sequence[StepRun]]


def newest_red(lines: Lines) -> dict[StepId, StepRun]:
    """The steps that failed in the lane's newest build, with that run."""
    newest = max((runs[0].build_number for runs in lines.values() if runs), default=0)
    return {
        step: runs[0]
        for step, runs in lines.items()
        if runs and runs[0].build_number == newest and not runs[0].passed
    }


async def images_episode(
    ctx: RepoScope,
    org: str,
    pipeline: str,
    lane: Lane,
    lines: Lines,
    builds: Mapping[int, Mapping[str, Any]],
) -> tuple[str | None, frozenset[StepId]]:
    """What was written for the lane's images (None: nothing to say), and the steps the
    images episode covers (not judged one by one)."""
    red = newest_red(lines)
    number = next(iter(red.values())).build_number if red else 0
    # Two builds of the lane finishing together must not both open the episode's issue.
    async with ctx.locks.hold(signal_key(ctx.repo, pipeline, IMAGES_STEP, lane.tag)):
        doc = await signal_state.load(ctx, pipeline, IMAGES_STEP, lane.tag)
        if red and doc.state == BROKEN and not doc.closed and doc.extra.get("build") == number:
            return "unchanged", frozenset(red)  # this build was judged already (a redelivery)
        if red and await _all_images(ctx, org, pipeline, red):
            check = await check_build(ctx, builds[number]) if number in builds else None
            if check is not None and check.missing:
                return await _open(ctx, pipeline, lane, red, check, doc), frozenset(red)
        return await _close(ctx, pipeline, lane, lines, doc), frozenset()


async def _all_images(
    ctx: RepoScope, org: str, pipeline: str, red: Mapping[StepId, StepRun]
) -> bool:
    """Whether every red run's log says its image is missing (stops at the first that does
    not: the steps are then judged one by one, which reads the same logs)."""
    for step, run in sorted(red.items(), key=lambda item: str(item[0])):
        lines = await log_lines(ctx, org, pipeline, run)
        if lines is None:
            return False
        _evidence, failure = judge_run(ctx, run, step.key, lines)
        if failure is not FailureClass.IMAGE_MISSING:
            return False
    return True


async def _open(
    ctx: RepoScope,
    pipeline: str,
    lane: Lane,
    red: Mapping[StepId, StepRun],
    check: ImageCheck,
    doc: SignalDoc,
) -> str:
    run = next(iter(red.values()))
    steps = sorted({*map(str, red), *doc.extra.get("steps", ())})
    if doc.state == BROKEN and not doc.closed and doc.complete:
        # The episode's issue is open: this build adds steps to wait for, nothing to say.
        doc.extra["steps"], doc.extra["build"] = steps, run.build_number
        await signal_state.save(ctx, pipeline, IMAGES_STEP, doc, lane.tag)
        return "unchanged"
    if doc.state != BROKEN or doc.closed:  # a new episode: nothing of the last one applies
        doc = SignalDoc(extra=doc.extra, since=run.build_number)
        doc.extra.pop("steps", None)
        steps = sorted(map(str, red))
    since = doc.since if doc.since is not None else run.build_number
    doc.state, doc.reason = BROKEN, REASON_IMAGES.format(number=run.build_number)
    doc.closed, doc.complete = False, False
    doc.extra["steps"] = steps
    await signal_state.save(ctx, pipeline, IMAGES_STEP, doc, lane.tag)

    async def save(updated: SignalDoc) -> None:
        await signal_state.save(ctx, pipeline, IMAGES_STEP, updated, lane.tag)

    body = images_text.images_body(
        pipeline=pipeline,
        lane=lane,
        build=run.build_number,
        commit=run.commit,
        steps=steps,
        table=image_table(check),
        since=since,
    )
    marker = images_text.images_marker(pipeline, since, lane)
    await write_issue(ctx, marker, doc, images_text.images_title(since, lane), body, save)
    doc.complete, doc.extra["build"] = True, run.build_number
    await save(doc)
    return f"issue #{doc.issue}"


async def _close(
    ctx: RepoScope, pipeline: str, lane: Lane, lines: Lines, doc: SignalDoc
) -> str | None:
    """Close the open episode once every step it named passed in its newest run."""
    if doc.state != BROKEN or doc.closed:
        return None
    newest = {str(step): runs[0] for step, runs in lines.items() if runs}
    named = [newest[step] for step in doc.extra.get("steps", ()) if step in newest]
    if not named or not all(run.passed for run in named):
        return None
    run = max(named, key=lambda found: found.build_number)
    await close_images(ctx, pipeline, lane, run, doc)
    doc.state, doc.reason, doc.closed = GREEN, "", True
    await signal_state.save(ctx, pipeline, IMAGES_STEP, doc, lane.tag)
    return "closed"
