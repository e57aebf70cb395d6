"""The generator's tables a repository's routing uses: the defaults, with the
``routing.tables`` overrides of its config applied (checked here, where the table
kinds are known: the config package does not know the routing model)."""

from __future__ import annotations

from bot.config.routing import RoutingConfig
from bot.routing.tables import RoutingTables, default_tables, with_overrides


def tables_of(routing: RoutingConfig) -> RoutingTables:
    """``RoutingTablesError`` (its message says which table and why) for bad overrides."""
    tables = default_tables()
    return with_overrides(tables, routing.tables) if routing.tables else tables
