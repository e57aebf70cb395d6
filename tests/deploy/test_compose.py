"""deploy/compose.yaml: the bot after its migration, on a healthy PostgreSQL 15."""

from __future__ import annotations

import re
from typing import Any

from tests.deploy.deploy_files import COMPOSE, SETTING_NAMES, load_mapping

BOT_SERVICES = ("migrate", "bot")
# Compose refuses to start when one of these is unset (`${NAME:?message}`), instead of
# starting a bot that then refuses to start.
REQUIRED_FROM_ENV = (
    "FOLLOWUP_BOT_WEBHOOK_SECRET",
    "FOLLOWUP_BOT_APP_ID",
    # Without it the status page is open to anyone who reaches the port.
    "FOLLOWUP_BOT_STATUS_TOKEN",
)
SECRETS_MOUNT = "/run/secrets/"


def _services() -> dict[str, Any]:
    services: dict[str, Any] = load_mapping(COMPOSE)["services"]
    return services


def _environment(service: str) -> dict[str, str]:
    environment: dict[str, str] = _services()[service]["environment"]
    return environment


def _healthcheck_command(service: str) -> str:
    test = _services()[service]["healthcheck"]["test"]
    return " ".join(test) if isinstance(test, list) else str(test)


def test_services_bot_migrate_and_db_exist() -> None:
    assert {"bot", "migrate", "db"} <= set(_services())


def test_db_is_postgresql_15_with_a_health_check() -> None:
    db = _services()["db"]
    assert db["image"].startswith("postgres:15")
    assert "pg_isready" in _healthcheck_command("db")
    assert db["volumes"]


def test_bot_waits_for_a_healthy_db_and_a_finished_migration() -> None:
    services = _services()
    assert services["bot"]["depends_on"]["db"]["condition"] == "service_healthy"
    assert services["bot"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    assert services["migrate"]["command"] == ["followup-bot", "migrate"]
    assert services["migrate"]["restart"] == "no"
    assert services["bot"]["command"] == ["followup-bot", "serve"]


def test_bot_health_check_hits_healthz_on_its_port() -> None:
    command = _healthcheck_command("bot")
    port = _environment("bot")["FOLLOWUP_BOT_PORT"]
    assert f":{port}/healthz" in command


def test_every_variable_given_to_the_bot_is_a_setting() -> None:
    for service in BOT_SERVICES:
        names = set(_environment(service))
        assert names <= SETTING_NAMES, service


def test_both_use_the_postgresql_database_on_the_db_service() -> None:
    for service in BOT_SERVICES:
        url = _environment(service)["FOLLOWUP_BOT_DATABASE"]
        assert url.startswith("postgresql://"), service
        assert url.endswith("@db:5432/followup_bot"), service


def test_secrets_come_from_the_environment_and_a_key_file() -> None:
    environment = _environment("bot")
    for name in REQUIRED_FROM_ENV:
        assert re.fullmatch(rf"\$\{{{name}:\?[^}}]+\}}", environment[name]), name
    key_file = environment["FOLLOWUP_BOT_PRIVATE_KEY_FILE"]
    assert key_file.startswith(SECRETS_MOUNT)
    secret = key_file.removeprefix(SECRETS_MOUNT)
    assert secret in _services()["bot"]["secrets"]
    assert load_mapping(COMPOSE)["secrets"][secret]["file"]
    assert "FOLLOWUP_BOT_PRIVATE_KEY" not in environment


def test_the_cache_is_on_a_named_volume() -> None:
    cache = _environment("bot")["FOLLOWUP_BOT_CACHE_DIR"]
    volumes = load_mapping(COMPOSE)["volumes"]
    mounts = [mount.split(":") for mount in _services()["bot"]["volumes"]]
    assert any(name in volumes and cache.startswith(target + "/") for name, target in mounts)
