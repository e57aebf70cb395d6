"""Main's routing as the dashboard shows it: steps per queue and the rules broken there,
recorded on each reconcile tick (the dashboard reads the store, never GitHub)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from bot.config.routing import RoutingConfig
from bot.github.changes import BranchHead
from bot.routing.model import Routes, route
from bot.routing.required import required_problems
from bot.routing_check.tables_config import tables_of
from bot.service.scope import RepoScope
from bot.store.kinds import Kind

MAX_PROBLEMS_KEPT = 20  # the dashboard lists a few; the routes command lists them all


def routing_doc(routes: Routes, routing: RoutingConfig, base_sha: str) -> dict[str, Any]:
    """The ``dashboard-routing`` document of one routing of main."""
    tables = tables_of(routing)
    problems = [
        *routes.problems,
        *required_problems(
            routes.steps, tables, keys=routing.required_keys, commands=routing.required_commands
        ),
    ]
    return {
        "base": base_sha,
        "queues": dict(sorted(Counter(step.queue for step in routes.steps).items())),
        "problems": [str(problem) for problem in problems[:MAX_PROBLEMS_KEPT]],
        "problem_count": len(problems),
    }


async def record_routing(
    ctx: RepoScope, base: BranchHead, files: Mapping[str, str], routing: RoutingConfig
) -> None:
    if ctx.config.routing is None and not ctx.config.migrations:
        return  # the repository has not asked about routing
    env = {"BUILDKITE_BRANCH": base.name}
    routes = await ctx.blocking.run(route, files, env=env, tables=tables_of(routing))
    doc = routing_doc(routes, routing, base.sha)
    await ctx.store.put_state(Kind.DASHBOARD_ROUTING, ctx.repo.full_name, doc)
