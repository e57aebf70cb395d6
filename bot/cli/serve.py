"""``followup-bot serve``: the settings read once from the environment (every problem
reported at once), then the webhook service.

Everything it writes once the settings are read goes through logging, so that in the
JSON format every line of its output is a JSON object: aiohttp's "Running on" banner
becomes one record, written whatever the level (it is the line that says the service
is up, and scripts wait for it), and the access log is ``bot.core.access_log``'s.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.core.settings import Settings

EXIT_USAGE = 2
REFUSING_TO_START = "followup-bot: refusing to start:\n{reason}"

log = logging.getLogger(__name__)


def serve() -> int:
    from aiohttp import web

    from bot.core import log_context
    from bot.core.access_log import AccessLogger
    from bot.service.app import create_app
    from bot.store.access import StoreUnavailable

    settings, problems = serve_settings(os.environ)
    if settings is None:
        print(REFUSING_TO_START.format(reason="\n".join(problems)), file=sys.stderr)
        return EXIT_USAGE
    create_default_database_folder(settings.database)
    log_context.configure(settings.log_level, settings.log_format)
    try:
        web.run_app(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            access_log_class=AccessLogger,
            print=say_running,
        )
    except StoreUnavailable as exc:  # above all: another serve holds this database
        refusal = REFUSING_TO_START.format(reason=exc)
        if settings.log_format == log_context.FORMAT_JSON:
            log.critical(refusal)
        else:
            print(refusal, file=sys.stderr)
        return EXIT_USAGE
    return 0


def say_running(banner: str) -> None:
    """aiohttp's banner once it listens, as one record: its first line without the
    rulers ("Running on http://host:port"), written whatever the level."""
    line = banner.strip().splitlines()[0].strip("= ") if banner.strip() else banner
    log.handle(log.makeRecord(log.name, logging.INFO, __file__, 0, line, (), None))


def create_default_database_folder(database: str) -> None:
    """The default SQLite file's folder (under the user's state folder) may not exist yet;
    a path someone set is theirs to provide."""
    from bot.core.settings import default_database

    if database == default_database(os.environ):
        Path(database).parent.mkdir(parents=True, exist_ok=True)


def serve_settings(env: Mapping[str, str]) -> tuple[Settings | None, list[str]]:
    """The settings ``serve`` runs with, or every reason it will not start: each missing or
    invalid variable and the empty repository list together, not one per attempt."""
    from bot.core.settings import SETTINGS_ERROR_HEADER, Settings, SettingsError
    from bot.service import startup

    try:
        settings = Settings.from_env(env)
    except SettingsError as exc:
        problems = [SETTINGS_ERROR_HEADER, *exc.problems]
        if not env.get("FOLLOWUP_BOT_REPOSITORIES", "").strip(" ,"):
            problems.append(startup.NO_REPOSITORIES)
        return None, problems
    refused = startup.refusal(settings)
    if refused is not None:
        return None, [refused]
    return settings, []
