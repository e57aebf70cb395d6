"""The culprit search for one lane of main: the step routed with the lane's own inputs, and
no compare when the last green and the first red build ran the same commit.

Within a lane, a green and a red build of one commit happen (the torch nightly moved, an
image was pushed late): no commit of the repository came between them, so there is
nothing to rank and nothing was rewritten; the note says what changed instead. Otherwise
``find_suspects`` ranks the range, routing both trees with the lane's own environment, so
the table shows the images the lane really pulled (``-torch-nightly-cpu``, not ``-cpu``).
"""

from __future__ import annotations

import gidgethub

from bot.config.routing import RoutingConfig
from bot.context.scope import RepoScope
from bot.github.ci_files import read_inputs
from bot.main_red import text
from bot.main_red.culprit import Confidence, Ranking
from bot.main_red.lanes import Lane, routing_env
from bot.main_red.signals import StepRun
from bot.main_red.suspects import Suspects, find_suspects
from bot.routing.model import RoutedStep, route
from bot.routing.repo_tables import tables_of

# What GitHub answers for a commit that is gone (force-pushed away and collected).
_GONE = (404, 409, 422)


def same_commit(green: StepRun, red: StepRun) -> bool:
    return bool(green.commit) and green.commit == red.commit


async def lane_suspects(
    ctx: RepoScope, lane: Lane, step_key: str, green: StepRun, red: StepRun, *, branch: str
) -> Suspects:
    if same_commit(green, red):
        step = await _route_at(ctx, lane, step_key, red.commit, branch)
        note = text.NOTE_SAME_COMMIT.format(
            green=f"#{green.build_number}",
            red=f"#{red.build_number}",
            commit7=text.short(red.commit),
        )
        ranking = Ranking((), None, Confidence.LOW, text.WHY_SAME_COMMIT)
        return Suspects(ranking, (), step, step, {}, (note,))
    return await find_suspects(ctx, step_key, green, red, branch=branch, lane_env=dict(lane.env))


async def _route_at(
    ctx: RepoScope, lane: Lane, step_key: str, commit: str, branch: str
) -> RoutedStep | None:
    """The step as the generator routes ``commit`` for a build of ``lane`` (None: the step
    is not in that tree, or the commit is gone)."""
    routing = ctx.config.routing or RoutingConfig()
    try:
        files = await read_inputs(ctx.gh, ctx.repo, commit, routing.ci_config, ctx.cache)
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) not in _GONE:
            raise
        return None
    env = routing_env(lane, branch=branch, commit=commit)
    routes = await ctx.blocking.run(route, files, env=env, tables=tables_of(routing))
    return next((step for step in routes.steps if step.key == step_key), None)
