"""`@bot why-red STEP`: the signal table and the culprit ranking, on demand.

Reads what a main build's judgement reads (the finished main builds, a few log tails,
and for a red step the two trees and one compare) and writes nothing but the reply:
the command is how a maintainer asks before the bot has decided, or after.
"""

from __future__ import annotations

from bot.github.default_branch import default_branch_name
from bot.main_red import text
from bot.main_red.reads import evidence_of, history_builds, main_builds, signatures_of
from bot.main_red.signals import (
    SignalState,
    StepId,
    StepRun,
    first_red,
    judge,
    runs_to_read,
    timelines,
)
from bot.main_red.suspects import find_suspects
from bot.service.scope import RepoScope

REFUSE_NO_MAIN_RED = "this repository's config has no buildkite section to read main's builds from"


def _pipelines(scope: RepoScope) -> tuple[str, ...]:
    config, buildkite = scope.config.main_red, scope.config.buildkite
    if config is not None and config.pipelines:
        return config.pipelines
    return buildkite.pipelines if buildkite is not None else ()


async def why_red(scope: RepoScope, step: str) -> str:
    """The reply: one section per pipeline (and shard) that ran ``step`` on main."""
    buildkite = scope.config.buildkite
    assert buildkite is not None  # the command checked it
    branch = await default_branch_name(scope.gh, scope.store, scope.repo)
    sections = []
    for pipeline in _pipelines(scope):
        builds = await main_builds(scope, buildkite.organization, pipeline, branch, newest=0)
        lines = timelines(builds)
        for found in sorted((s for s in lines if s.key == step), key=str):
            sections.append(
                await _section(scope, buildkite.organization, pipeline, branch, found, lines[found])
            )
    if not sections:
        count = history_builds(scope)
        return text.WHY_RED_UNKNOWN_STEP.format(
            step=step, count=count, pipelines=", ".join(f"`{p}`" for p in _pipelines(scope))
        )
    return "\n\n".join(sections)


async def _section(
    scope: RepoScope,
    org: str,
    pipeline: str,
    branch: str,
    step: StepId,
    runs: tuple[StepRun, ...],
) -> str:
    newest = runs[0]
    if newest.passed:
        return text.WHY_RED_GREEN.format(
            step=step, build=f"#{newest.build_number}", commit7=text.short(newest.commit)
        )
    evidence, _classes = await evidence_of(scope, org, pipeline, step.key, runs_to_read(runs))
    signal = judge(step, runs, evidence)
    head = text.WHY_RED_STATE.format(step=step, state=signal.state.value, reason=signal.reason)
    first = first_red(signal)
    if signal.last_green is None or first is None or signal.state is SignalState.UNKNOWN:
        table = text.signal_table(signal, signatures_of(evidence), None, None)
        return f"{head}\n\n{table}"
    suspects = await find_suspects(scope, step.key, signal.last_green, first, branch=branch)
    table = text.signal_table(signal, signatures_of(evidence), suspects.before, suspects.after)
    culprit = text.culprit_section(suspects.ranking, suspects.changes)
    return "\n\n".join([head, table, culprit])
