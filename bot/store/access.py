"""How a command opens the bot's database, and the error that says it cannot, for both backends."""

from __future__ import annotations

import urllib.parse
from enum import StrEnum


class Access(StrEnum):
    """How a store opens its database (the values are SQLite's URI ``mode``s)."""

    OWNER = "rwc"  # create it if need be and bring its schema up to date
    WRITE = "rw"  # an existing bot database at the current schema, written to
    READ = "ro"  # an existing bot database at the current schema, never written


class StoreUnavailable(Exception):
    """The database cannot be opened as asked: the message says why, for an operator."""


POSTGRES_SCHEMES = ("postgresql", "postgres")
HIDDEN = "***"


def is_postgres(database: str) -> bool:
    """Whether ``FOLLOWUP_BOT_DATABASE`` names a PostgreSQL server (else: a SQLite file)."""
    return urllib.parse.urlsplit(database).scheme in POSTGRES_SCHEMES


def redacted(database: str) -> str:
    """The database as logs may show it: a URL's password replaced, a file path as is."""
    if not is_postgres(database):
        return database
    parts = urllib.parse.urlsplit(database)
    fields = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    if parts.password is None and not any(key == "password" for key, _ in fields):
        return database
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        name = user.split(":", 1)[0]
        netloc = f"{name}:{HIDDEN}@{host}"
    query = urllib.parse.urlencode(
        [(key, HIDDEN if key == "password" else value) for key, value in fields], safe="*"
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
