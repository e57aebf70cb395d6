"""Environment → frozen settings, read once at start-up.

The service refuses to start without its secrets: a webhook secret that is
silently unset would disable signature checks, so every missing or invalid
variable is reported together (one per line) instead of failing on the first.
Nothing here reads ``os.environ``; the caller passes the mapping in once.

Longer than 400 lines because the table of every variable (its default and the
README's description) is kept beside the reader that parses it, so neither can
drift from the other.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")

PREFIX = "FOLLOWUP_BOT_"

SETTINGS_ERROR_HEADER = "invalid followup-bot configuration:"
MISSING = "{name}: required but not set"
EMPTY = "{name}: must not be empty"
NOT_AN_INT = "{name}: {value!r} is not an integer"
NOT_A_NUMBER = "{name}: {value!r} is not a number"
OUT_OF_RANGE = "{name}: {value} is outside {low}..{high}"
NOT_POSITIVE = "{name}: {value!r} is not a finite number above 0"
BAD_URL = "{name}: {value!r} is not an http(s) URL"
BAD_REPOSITORY = "{name}: {value!r} is not owner/name"
BAD_LOG_LEVEL = "{name}: {value!r} is not one of {choices}"
BOTH_KEYS = "{name}: set either {name} or {other}, not both"
ONE_OF_PAIR = "{name} is set but {other} is not: set both or neither"
NOT_PEM = "{name}: does not look like a PEM private key"
UNREADABLE_KEY = "{name}: cannot read {value!r}: {reason}"

DEFAULT_BUILDKITE_API_URL = "https://api.buildkite.com/v2"

# The defaults of the database and the wheel cache are the user's state and cache folders
# (XDG base directories), never the working directory: `serve` started from another
# folder must find the same inbox. The container sets both explicitly (deploy/).
APP_FOLDER = "followup-bot"
DATABASE_FILE = "followup-bot.sqlite3"
CACHE_FOLDER = "wheels"
DEFAULT_DATABASE_SHOWN = f"$XDG_STATE_HOME/{APP_FOLDER}/{DATABASE_FILE}"
DEFAULT_CACHE_DIR_SHOWN = f"$XDG_CACHE_HOME/{APP_FOLDER}/{CACHE_FOLDER}"

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")  # bot.core.log_context writes each

# GitHub logins: alphanumerics and single hyphens; repository names also allow
# dots and underscores. Checked here so a typo fails at start-up, not at the
# first API call.
_REPOSITORY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?/[A-Za-z0-9._-]+")
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END (?:[A-Z]+ )?PRIVATE KEY-----")


class SettingsError(Exception):
    """The environment does not describe a runnable bot; ``problems`` lists why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join([SETTINGS_ERROR_HEADER, *problems]))
        self.problems = tuple(problems)


@dataclass(frozen=True)
class EnvVar:
    """One environment variable: the README table is generated from these."""

    name: str
    field: str  # the Settings field it sets
    default: str | None  # None: no default (required, or one of a required pair)
    description: str


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(
        f"{PREFIX}WEBHOOK_SECRET",
        "webhook_secret",
        None,
        "Secret shared with GitHub to sign webhook deliveries (required).",
    ),
    EnvVar(f"{PREFIX}APP_ID", "app_id", None, "GitHub App id or client id (required)."),
    EnvVar(
        f"{PREFIX}PRIVATE_KEY",
        "private_key",
        None,
        "GitHub App private key, PEM text. Set this or the _FILE variant.",
    ),
    EnvVar(
        f"{PREFIX}PRIVATE_KEY_FILE",
        "private_key",
        None,
        "Path of the GitHub App private key (PEM). Set this or the inline variant.",
    ),
    EnvVar(
        f"{PREFIX}REPOSITORIES",
        "repositories",
        "",
        "Comma-separated owner/name of the repositories the bot works on.",
    ),
    EnvVar(
        f"{PREFIX}GITHUB_API_URL",
        "github_api_url",
        "https://api.github.com",
        "Base URL of the GitHub REST API.",
    ),
    EnvVar(
        f"{PREFIX}DATABASE",
        "database",
        DEFAULT_DATABASE_SHOWN,
        "SQLite database file (one serve), or a postgresql:// URL (any number of replicas). "
        "The default's folder is `~/.local/state` without `XDG_STATE_HOME`, and is created.",
    ),
    EnvVar(
        f"{PREFIX}RETENTION_DAYS",
        "retention_days",
        "30",
        "Days finished deliveries and per-command records are kept (more than 0).",
    ),
    EnvVar(f"{PREFIX}HOST", "host", "127.0.0.1", "Address the webhook server listens on."),
    EnvVar(f"{PREFIX}PORT", "port", "8080", "Port the webhook server listens on (0: any)."),
    EnvVar(f"{PREFIX}WORKERS", "workers", "4", "Inbox workers running deliveries (1..64)."),
    EnvVar(
        f"{PREFIX}RECONCILE_INTERVAL",
        "reconcile_interval",
        "300",
        "Seconds between reconcile ticks; 0 disables them.",
    ),
    EnvVar(
        f"{PREFIX}MAX_ATTEMPTS",
        "max_attempts",
        "8",
        "Attempts at a delivery before it is recorded as failed.",
    ),
    EnvVar(
        f"{PREFIX}RETRY_BACKOFF",
        "retry_backoff",
        "2",
        "First delay before a failed delivery runs again, seconds; it doubles (with jitter)"
        " up to 600.",
    ),
    EnvVar(f"{PREFIX}HTTP_TIMEOUT", "http_timeout", "30", "Timeout of one HTTP request, seconds."),
    EnvVar(
        f"{PREFIX}HTTP_RETRY_BACKOFF",
        "http_retry_backoff",
        "1",
        "First delay before a request that GitHub or Buildkite failed (5xx, no answer) is"
        " sent again, seconds; it doubles up to 8 times this.",
    ),
    EnvVar(
        f"{PREFIX}GITHUB_CONCURRENCY",
        "github_concurrency",
        "10",
        "GitHub requests in flight per installation (1..100); writes are also paced to "
        "GitHub's 80 a minute and 500 an hour.",
    ),
    EnvVar(
        f"{PREFIX}GITHUB_WRITES_PER_MINUTE",
        "github_writes_per_minute",
        "80",
        "Content-creating GitHub requests per minute per installation (GitHub's secondary "
        "limit; a GitHub Enterprise Server may set another).",
    ),
    EnvVar(
        f"{PREFIX}GITHUB_WRITES_PER_HOUR",
        "github_writes_per_hour",
        "500",
        "The same per hour.",
    ),
    EnvVar(f"{PREFIX}LOGIN", "bot_login", "followup-bot[bot]", "The bot's own GitHub login."),
    EnvVar(f"{PREFIX}LOG_LEVEL", "log_level", "INFO", "Logging level: " + ", ".join(LOG_LEVELS)),
    EnvVar(
        f"{PREFIX}LOG_FORMAT",
        "log_format",
        "text",
        "Log lines: text, or json (one object a line, with the delivery's fields).",
    ),
    EnvVar(
        f"{PREFIX}BUILDKITE_API_TOKEN",
        "buildkite_api_token",
        None,
        "Buildkite API access token; without it the Buildkite side is off.",
    ),
    EnvVar(
        f"{PREFIX}BUILDKITE_API_URL",
        "buildkite_api_url",
        DEFAULT_BUILDKITE_API_URL,
        "Base URL of the Buildkite REST API.",
    ),
    EnvVar(
        f"{PREFIX}BUILDKITE_REQUESTS_PER_MINUTE",
        "buildkite_requests_per_minute",
        "50",
        "Buildkite API requests the token may send in any minute (1..10000); more wait.",
    ),
    EnvVar(
        f"{PREFIX}BUILDKITE_WEBHOOK_SECRET",
        "buildkite_webhook_secret",
        None,
        "Buildkite webhook signature secret (X-Buildkite-Signature). Set this or the token.",
    ),
    EnvVar(
        f"{PREFIX}BUILDKITE_WEBHOOK_TOKEN",
        "buildkite_webhook_token",
        None,
        "Buildkite webhook plain token (X-Buildkite-Token). Set this or the secret.",
    ),
    EnvVar(
        f"{PREFIX}BUILDKITE_SIGNATURE_MAX_AGE",
        "buildkite_signature_max_age",
        "300",
        "Seconds a Buildkite webhook signature stays valid (replay protection).",
    ),
    EnvVar(
        f"{PREFIX}REGISTRY_USERNAME",
        "registry_username",
        None,
        "User for the CI image registry (its token endpoint or basic auth); anonymous "
        "if unset. Set together with the password.",
    ),
    EnvVar(
        f"{PREFIX}REGISTRY_PASSWORD",
        "registry_password",
        None,
        "Password or token for the CI image registry. Set together with the username.",
    ),
    EnvVar(
        f"{PREFIX}CACHE_DIR",
        "cache_dir",
        DEFAULT_CACHE_DIR_SHOWN,
        "Directory for downloaded wheels the bot audits (the last few are kept); "
        "`~/.cache` without `XDG_CACHE_HOME`.",
    ),
    EnvVar(
        f"{PREFIX}STATUS_TOKEN",
        "status_token",
        None,
        "Token /status asks for: `Authorization: Bearer` + the token (scripts), or the "
        "sign-in form and its session cookie (browsers); open if unset.",
    ),
    EnvVar(
        f"{PREFIX}ADOPT_DASHBOARD",
        "adopt_dashboard",
        None,
        "Moving to a new database: the deployment id (or `unmarked`) whose dashboard issues "
        "this deployment takes over; `followup-bot doctor` prints it.",
    ),
)


def env_table_markdown() -> str:
    """The README's table of environment variables."""
    rows = ["| variable | default | description |", "|---|---|---|"]
    for var in ENV_VARS:
        default = "(none)" if var.default is None else f"`{var.default}`"
        rows.append(f"| `{var.name}` | {default} | {var.description} |")
    return "\n".join(rows)


@dataclass(frozen=True)
class Settings:
    webhook_secret: str = field(repr=False)
    app_id: str
    private_key: str = field(repr=False)
    repositories: tuple[str, ...]
    github_api_url: str = "https://api.github.com"
    database: str = "followup-bot.sqlite3"
    retention_days: float = 30.0
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 4
    reconcile_interval: float = 300.0
    max_attempts: int = 8
    retry_backoff: float = 2.0
    http_timeout: float = 30.0
    http_retry_backoff: float = 1.0
    github_concurrency: int = 10
    github_writes_per_minute: int = 80
    github_writes_per_hour: int = 500
    bot_login: str = "followup-bot[bot]"
    log_level: str = "INFO"
    log_format: str = "text"
    # The Buildkite side is optional: off without an API token.
    buildkite_api_token: str | None = field(default=None, repr=False)
    buildkite_api_url: str = DEFAULT_BUILDKITE_API_URL
    buildkite_requests_per_minute: int = 50
    buildkite_webhook_secret: str | None = field(default=None, repr=False)
    buildkite_webhook_token: str | None = field(default=None, repr=False)
    buildkite_signature_max_age: float = 300.0
    cache_dir: str = "followup-bot-cache"
    # The image registry: anonymous unless both are set (public registries answer so).
    registry_username: str | None = field(default=None, repr=False)
    registry_password: str | None = field(default=None, repr=False)
    # The status page is open without it; with it, only a request bearing it sees the page.
    status_token: str | None = field(default=None, repr=False)
    # Another deployment's id whose dashboards this one takes over (bot.dashboard.issue).
    adopt_dashboard: str | None = None

    @property
    def buildkite_enabled(self) -> bool:
        return self.buildkite_api_token is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Build settings from ``env``; ``SettingsError`` lists every problem."""
        reader = _Reader(env)
        settings = cls(
            webhook_secret=reader.required("WEBHOOK_SECRET"),
            app_id=reader.required("APP_ID").strip(),
            private_key=reader.private_key(),
            repositories=reader.optional("REPOSITORIES", (), _parse_repositories),
            github_api_url=reader.optional("GITHUB_API_URL", cls.github_api_url, _parse_url),
            database=reader.optional("DATABASE", default_database(env), str),
            retention_days=reader.optional("RETENTION_DAYS", cls.retention_days, _positive_float),
            host=reader.optional("HOST", cls.host, str.strip),
            port=reader.optional("PORT", cls.port, _ranged_int(0, 65535)),
            workers=reader.optional("WORKERS", cls.workers, _ranged_int(1, 64)),
            reconcile_interval=reader.optional(
                "RECONCILE_INTERVAL", cls.reconcile_interval, _ranged_float(0.0, 7 * 86400.0)
            ),
            max_attempts=reader.optional("MAX_ATTEMPTS", cls.max_attempts, _ranged_int(1, 100)),
            retry_backoff=reader.optional(
                "RETRY_BACKOFF", cls.retry_backoff, _ranged_float(0.0, 600.0)
            ),
            http_timeout=reader.optional(
                "HTTP_TIMEOUT", cls.http_timeout, _ranged_float(0.001, 3600.0)
            ),
            http_retry_backoff=reader.optional(
                "HTTP_RETRY_BACKOFF", cls.http_retry_backoff, _ranged_float(0.0, 60.0)
            ),
            github_concurrency=reader.optional(
                "GITHUB_CONCURRENCY", cls.github_concurrency, _ranged_int(1, 100)
            ),
            github_writes_per_minute=reader.optional(
                "GITHUB_WRITES_PER_MINUTE", cls.github_writes_per_minute, _ranged_int(1, 100_000)
            ),
            github_writes_per_hour=reader.optional(
                "GITHUB_WRITES_PER_HOUR", cls.github_writes_per_hour, _ranged_int(1, 10_000_000)
            ),
            bot_login=reader.optional("LOGIN", cls.bot_login, str.strip),
            log_level=reader.optional("LOG_LEVEL", cls.log_level, _parse_log_level),
            log_format=reader.optional("LOG_FORMAT", cls.log_format, _parse_log_format),
            buildkite_api_token=reader.optional("BUILDKITE_API_TOKEN", None, _token),
            buildkite_api_url=reader.optional(
                "BUILDKITE_API_URL", cls.buildkite_api_url, _parse_url
            ),
            buildkite_requests_per_minute=reader.optional(
                "BUILDKITE_REQUESTS_PER_MINUTE",
                cls.buildkite_requests_per_minute,
                _ranged_int(1, 10000),
            ),
            buildkite_webhook_secret=reader.exclusive(
                "BUILDKITE_WEBHOOK_SECRET", "BUILDKITE_WEBHOOK_TOKEN", str
            ),
            # Compared with a header value, which never carries surrounding blanks.
            buildkite_webhook_token=reader.exclusive(
                "BUILDKITE_WEBHOOK_TOKEN", "BUILDKITE_WEBHOOK_SECRET", str.strip
            ),
            buildkite_signature_max_age=reader.optional(
                "BUILDKITE_SIGNATURE_MAX_AGE",
                cls.buildkite_signature_max_age,
                _ranged_float(1.0, 86400.0),
            ),
            cache_dir=reader.optional("CACHE_DIR", default_cache_dir(env), str),
            registry_username=reader.together("REGISTRY_USERNAME", "REGISTRY_PASSWORD", str),
            registry_password=reader.together("REGISTRY_PASSWORD", "REGISTRY_USERNAME", str),
            status_token=reader.optional("STATUS_TOKEN", None, _token),
            adopt_dashboard=reader.optional("ADOPT_DASHBOARD", None, str.strip),
        )
        if reader.problems:
            raise SettingsError(reader.problems)
        return settings


def _base_directory(env: Mapping[str, str], variable: str, fallback: str) -> Path:
    """An XDG base directory: ``$variable`` when it is an absolute path (the spec ignores a
    relative one), else ``fallback`` under the home folder."""
    value = env.get(variable, "")
    if value and Path(value).is_absolute():
        return Path(value)
    home = env.get("HOME", "")
    return (Path(home) if home and Path(home).is_absolute() else Path.home()) / fallback


def default_database(env: Mapping[str, str]) -> str:
    """Where the SQLite database is without ``FOLLOWUP_BOT_DATABASE``: an absolute path."""
    state = _base_directory(env, "XDG_STATE_HOME", ".local/state")
    return str(state / APP_FOLDER / DATABASE_FILE)


def default_cache_dir(env: Mapping[str, str]) -> str:
    """Where downloaded wheels go without ``FOLLOWUP_BOT_CACHE_DIR``: an absolute path."""
    return str(_base_directory(env, "XDG_CACHE_HOME", ".cache") / APP_FOLDER / CACHE_FOLDER)


def env_help() -> str:
    """The environment ``serve`` reads, for ``serve --help``: each variable and its default."""
    lines = ["environment (read once at start-up; every problem is reported at once):"]
    for var in ENV_VARS:
        default = "no default" if var.default is None else f"default: {var.default or '(empty)'}"
        lines.append(f"  {var.name}  ({default})")
        description = var.description.replace("`", "")
        lines.append(
            textwrap.fill(description, 88, initial_indent=" " * 6, subsequent_indent=" " * 6)
        )
    return "\n".join(lines)


def private_key_of(env: Mapping[str, str]) -> str | None:
    """The App's private key as ``Settings.from_env`` reads it from ``env`` (inline, with
    ``\\n`` escapes, or from its file); None where it would refuse it."""
    reader = _Reader(env)
    key = reader.private_key()
    return None if reader.problems else key


class _Invalid(ValueError):
    """A parser's complaint, formatted by ``_Reader`` with the variable name."""

    def __init__(self, template: str, **fields: object) -> None:
        super().__init__(template)
        self.template = template
        self.fields = fields


class _Reader:
    """Reads variables, collecting problems instead of stopping at the first."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self.problems: list[str] = []
        self._conflicts: set[frozenset[str]] = set()

    def _raw(self, suffix: str) -> str | None:
        # An empty value counts as unset: `VAR=` in an env file usually means
        # "not configured", and for the secrets it must never mean "no secret".
        value = self._env.get(PREFIX + suffix)
        return value if value is not None and value.strip() else None

    def required(self, suffix: str) -> str:
        name = PREFIX + suffix
        value = self._raw(suffix)
        if value is None:
            template = EMPTY if name in self._env else MISSING
            self.problems.append(template.format(name=name))
            return ""
        return value

    def optional(self, suffix: str, default: T, parse: Callable[[str], T]) -> T:
        name = PREFIX + suffix
        value = self._raw(suffix)
        if value is None:
            return default
        try:
            return parse(value)
        except _Invalid as invalid:
            fields: dict[str, object] = {"value": value, **invalid.fields}
            self.problems.append(invalid.template.format(name=name, **fields))
            return default

    def exclusive(self, suffix: str, other: str, parse: Callable[[str], str]) -> str | None:
        """An optional value that must not be set together with ``other``.

        Called for both of the pair; the conflict is reported once, and then
        neither value is used.
        """
        value = self._raw(suffix)
        if value is None:
            return None
        if self._raw(other) is not None:
            pair = frozenset({suffix, other})
            if pair not in self._conflicts:
                self._conflicts.add(pair)
                self.problems.append(BOTH_KEYS.format(name=PREFIX + suffix, other=PREFIX + other))
            return None
        return parse(value)

    def together(self, suffix: str, other: str, parse: Callable[[str], str]) -> str | None:
        """An optional value that needs ``other`` set too (credentials come in pairs)."""
        value = self._raw(suffix)
        if value is None:
            return None
        if self._raw(other) is None:
            self.problems.append(ONE_OF_PAIR.format(name=PREFIX + suffix, other=PREFIX + other))
            return None
        return parse(value)

    def private_key(self) -> str:
        inline_name, file_name = PREFIX + "PRIVATE_KEY", PREFIX + "PRIVATE_KEY_FILE"
        inline, path = self._raw("PRIVATE_KEY"), self._raw("PRIVATE_KEY_FILE")
        if inline is not None and path is not None:
            self.problems.append(BOTH_KEYS.format(name=inline_name, other=file_name))
            return ""
        if inline is None and path is None:
            self.problems.append(MISSING.format(name=f"{inline_name} or {file_name}"))
            return ""
        if inline is not None:
            # Many secret stores cannot hold newlines, so "\n" escapes are accepted.
            key, name = (inline if "\n" in inline else inline.replace("\\n", "\n")), inline_name
        else:
            assert path is not None
            name = file_name
            try:
                key = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                self.problems.append(UNREADABLE_KEY.format(name=name, value=path, reason=reason))
                return ""
        if not (_PEM_BEGIN.search(key) and _PEM_END.search(key)):
            self.problems.append(NOT_PEM.format(name=name))
            return ""
        return key


def _parse_repositories(value: str) -> tuple[str, ...]:
    repositories: list[str] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue  # tolerate "a/b, c/d," and stray spaces
        if not _REPOSITORY.fullmatch(item):
            raise _Invalid(BAD_REPOSITORY, value=item)
        if item not in repositories:
            repositories.append(item)
    return tuple(repositories)


def _token(value: str) -> str:
    # Sent in an Authorization header, where a stray newline from a secret file breaks it.
    return value.strip()


def _parse_url(value: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _Invalid(BAD_URL)
    return value.strip().rstrip("/")


def _ranged_int(low: int, high: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise _Invalid(NOT_AN_INT) from None
        if not low <= number <= high:
            raise _Invalid(OUT_OF_RANGE, value=number, low=low, high=high)
        return number

    return parse


def _ranged_float(low: float, high: float) -> Callable[[str], float]:
    def parse(value: str) -> float:
        try:
            number = float(value.strip())
        except ValueError:
            raise _Invalid(NOT_A_NUMBER) from None
        if not math.isfinite(number) or not low <= number <= high:
            raise _Invalid(OUT_OF_RANGE, value=number, low=low, high=high)
        return number

    return parse


def _positive_float(value: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        raise _Invalid(NOT_A_NUMBER) from None
    if not (math.isfinite(number) and number > 0.0):
        raise _Invalid(NOT_POSITIVE)
    return number


def _parse_log_level(value: str) -> str:
    level = value.strip().upper()
    if level not in LOG_LEVELS:
        raise _Invalid(BAD_LOG_LEVEL, choices=", ".join(LOG_LEVELS))
    return level


def _parse_log_format(value: str) -> str:
    log_format = value.strip().lower()
    if log_format not in LOG_FORMATS:
        raise _Invalid(BAD_LOG_LEVEL, choices=", ".join(LOG_FORMATS))
    return log_format
