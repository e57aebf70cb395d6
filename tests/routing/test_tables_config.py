"""The tables a repository's routing uses: defaults plus its config's overrides."""

from __future__ import annotations

import pytest

from bot.config.parse import parse_repo_config
from bot.config.routing import RoutingConfig
from bot.routing.repo_tables import tables_of
from bot.routing.tables import RoutingTablesError, default_tables


def test_no_overrides_are_the_defaults() -> None:
    assert tables_of(RoutingConfig()) == default_tables()


def test_a_new_device_routes_to_its_queue() -> None:
    config = parse_repo_config("routing:\n  tables:\n    device_queues: {h300: h300_queue}\n")
    assert config.routing is not None
    tables = tables_of(config.routing)
    assert tables.device_queues["h300"] == "h300_queue"
    assert tables.device_queues["l4"] == default_tables().device_queues["l4"]  # merged


def test_an_unknown_table_is_a_permanent_error_naming_it() -> None:
    config = parse_repo_config("routing:\n  tables:\n    device_queue: {h300: q}\n")
    assert config.routing is not None
    with pytest.raises(RoutingTablesError, match="device_queue"):
        tables_of(config.routing)
