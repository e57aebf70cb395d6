"""A repository's routing config applied to the model: the generator's tables (the
defaults with the ``routing.tables`` overrides, checked here, where the table kinds are
known: the config package does not know the routing model) and the problems a routing
has under it (the model's own and those of the steps that need the CUDA build)."""

from __future__ import annotations

from bot.config.routing import RoutingConfig
from bot.routing.model import Routes
from bot.routing.problems import RoutingProblem
from bot.routing.required import required_problems
from bot.routing.tables import RoutingTables, default_tables, with_overrides


def tables_of(routing: RoutingConfig) -> RoutingTables:
    """``RoutingTablesError`` (its message says which table and why) for bad overrides."""
    tables = default_tables()
    return with_overrides(tables, routing.tables) if routing.tables else tables


def routing_problems(
    routes: Routes, routing: RoutingConfig, tables: RoutingTables
) -> list[RoutingProblem]:
    required = required_problems(
        routes.steps, tables, keys=routing.required_keys, commands=routing.required_commands
    )
    return [*routes.problems, *required]
