"""`@bot why-red STEP`: the signal table and the culprit ranking, on demand.

Reads what a main build's judgement reads (the finished main builds, a few log tails,
and for a red step the two trees and one compare) and writes nothing but the reply:
the command is how a maintainer asks before the bot has decided, or after. One section
per pipeline, lane of main and shard that ran the step. The ranking is shown whenever
there is a range to rank — whatever the step's state (red once, flaky, unknown because a
log could not be read, broken), and for a step green again, that of its last red streak —
and only a step that never passed before its red runs has none.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.context.scope import RepoScope
from bot.github.default_branch import default_branch_name
from bot.main_red import text
from bot.main_red.lane_suspects import lane_suspects
from bot.main_red.lanes import Lane, by_lane, lanes_of
from bot.main_red.reads import evidence_of, history_builds, main_builds, signatures_of
from bot.main_red.signals import (
    StepId,
    StepRun,
    first_red,
    judge,
    last_episode,
    runs_to_read,
    timelines,
)

REFUSE_NO_MAIN_RED = "this repository's config has no buildkite section to read main's builds from"


def _pipelines(scope: RepoScope) -> tuple[str, ...]:
    config, buildkite = scope.config.main_red, scope.config.buildkite
    if config is not None and config.pipelines:
        return config.pipelines
    return buildkite.pipelines if buildkite is not None else ()


async def why_red(scope: RepoScope, step: str) -> str:
    """The reply: one section per pipeline, lane and shard that ran ``step`` on main."""
    buildkite = scope.config.buildkite
    assert buildkite is not None  # the command checked it
    branch = await default_branch_name(scope.gh, scope.store, scope.repo)
    where = _Where(scope, buildkite.organization, branch)
    sections = []
    for pipeline in _pipelines(scope):
        builds = await main_builds(scope, buildkite.organization, pipeline, branch, newest=0)
        for lane, found in by_lane(builds, lanes_of(scope.config.main_red)).items():
            lines = timelines(found)
            for one in sorted((s for s in lines if s.key == step), key=str):
                sections.append(await where.section(pipeline, lane, one, lines[one]))
    if not sections:
        count = history_builds(scope)
        return text.WHY_RED_UNKNOWN_STEP.format(
            step=step, count=count, pipelines=", ".join(f"`{p}`" for p in _pipelines(scope))
        )
    return "\n\n".join(sections)


@dataclass(frozen=True)
class _Where:
    scope: RepoScope
    org: str
    branch: str

    async def section(
        self, pipeline: str, lane: Lane, step: StepId, runs: tuple[StepRun, ...]
    ) -> str:
        newest, on_main = runs[0], text.on_main(lane)
        green_now = text.WHY_RED_GREEN.format(
            step=step,
            on_main=on_main,
            build=f"#{newest.build_number}",
            commit7=text.short(newest.commit),
        )
        episode = last_episode(runs)
        if not episode:
            return green_now  # never red in the builds read: nothing to rank
        evidence, _classes = await evidence_of(
            self.scope, self.org, pipeline, step.key, runs_to_read(episode)
        )
        signal = judge(step, episode, evidence)
        state, reason = signal.state.value, signal.reason
        if newest.passed:
            head = green_now + " " + text.WHY_RED_LAST_EPISODE.format(state=state, reason=reason)
        else:
            head = text.WHY_RED_STATE.format(step=step, on_main=on_main, state=state, reason=reason)
        first, green = first_red(signal), signal.last_green
        signatures = signatures_of(evidence)
        if green is None or first is None:
            table = text.signal_table(signal, signatures, None, None)
            return "\n\n".join([head, table, text.WHY_RED_NO_RANKING])
        suspects = await lane_suspects(self.scope, lane, step.key, green, first, branch=self.branch)
        parts = [
            head,
            text.signal_table(signal, signatures, suspects.before, suspects.after),
            text.culprit_section(suspects.ranking, suspects.changes),
        ]
        if suspects.notes:
            parts.append(text.notes_section(suspects.notes))
        return "\n\n".join(parts)
