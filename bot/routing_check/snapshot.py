"""Main's routing as the dashboard shows it: steps per queue and the rules broken there,
recorded on each reconcile tick (the dashboard reads the store, never GitHub)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from bot.config.routing import RoutingConfig
from bot.context.scope import RepoScope
from bot.github.changes import BranchHead
from bot.routing.model import Routes, route
from bot.routing.repo_tables import routing_problems, tables_of
from bot.routing.tables import RoutingTables
from bot.store.kinds import Kind

MAX_PROBLEMS_KEPT = 20  # the dashboard lists a few; the routes command lists them all


def routing_doc(
    routes: Routes, routing: RoutingConfig, tables: RoutingTables, base_sha: str
) -> dict[str, Any]:
    """The ``dashboard-routing`` document of one routing of main."""
    problems = routing_problems(routes, routing, tables)
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
    tables = tables_of(routing)
    routes = await ctx.blocking.run(route, files, env=env, tables=tables)
    doc = routing_doc(routes, routing, tables, base.sha)
    await ctx.store.put_state(Kind.DASHBOARD_ROUTING, ctx.repo.full_name, doc)
