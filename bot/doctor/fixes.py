"""What each failing doctor check tells the operator to do (asserted by the tests)."""

from __future__ import annotations

FIX_SETTINGS = "set it in the service's environment (README: Configuration)"
FIX_KEY = (
    "set FOLLOWUP_BOT_APP_ID to the App's id and FOLLOWUP_BOT_PRIVATE_KEY(_FILE) to a "
    "private key generated on that App's settings page"
)
FIX_GITHUB_UNREACHABLE = "check FOLLOWUP_BOT_GITHUB_API_URL and that GitHub answers from here"
FIX_PERMISSIONS = (
    "grant them in the App's settings (Permissions & events), then accept the change on "
    "each installation"
)
FIX_EVENTS = "subscribe the App to them in its settings (Permissions & events)"
FIX_NOT_INSTALLED = "install the App on {repo} (the App's page: Install App)"
FIX_INSTALLATION_PERMISSIONS = "accept the App's new permissions in {repo}'s installation settings"
FIX_NO_CONFIG = (
    "add .github/followup-bot.yml to {repo}'s default branch (followup-bot discover proposes one)"
)
FIX_CONFIG = (
    "fix .github/followup-bot.yml on {repo}'s default branch (followup-bot check-config "
    "lists each problem)"
)
FIX_UPSTREAM = (
    "install the App on {upstream}, so the bot reads it and gets its pushes, or correct "
    "the pin's upstream"
)
FIX_PIN_FILE = (
    "correct the pin's file or dependency in the config, or the file itself "
    "(followup-bot check-config --repo shows it on a checkout)"
)
FIX_BUILDKITE_TOKEN = "set FOLLOWUP_BOT_BUILDKITE_API_TOKEN to a valid Buildkite API access token"
FIX_BUILDKITE_UNREACHABLE = "check FOLLOWUP_BOT_BUILDKITE_API_URL and that Buildkite answers"
FIX_BUILDKITE_SCOPES = (
    "create a Buildkite API access token with the scopes {scopes} and set "
    "FOLLOWUP_BOT_BUILDKITE_API_TOKEN to it"
)
FIX_BUILDKITE_WEBHOOK = (
    "set FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET (or _TOKEN) to the secret of the Buildkite "
    "webhook notification service"
)
FIX_TIMED_OUT = "check that {service} answers from here (FOLLOWUP_BOT_HTTP_TIMEOUT: {seconds:g} s)"
FIX_DATABASE_UNREACHABLE = (
    "check FOLLOWUP_BOT_DATABASE (a SQLite file's path, or the postgresql:// URL: host, "
    "port, user, password, database) and that the database accepts connections from here"
)
FIX_INBOX_STALE = (
    "no worker has taken the oldest delivery: check that a replica runs (/healthz), read its "
    "log, and list what waits with followup-bot deliveries list"
)
FIX_DATABASE_SCHEMA = "run followup-bot migrate with the same FOLLOWUP_BOT_DATABASE"
FIX_FOREIGN_DASHBOARD = (
    "if this deployment replaces that one (a move to a new database), set {setting}={value} "
    "and restart it; otherwise it is a second deployment by mistake: stop it, or point "
    "FOLLOWUP_BOT_DATABASE at that deployment's database"
)
FIX_REGISTRY_UNREACHABLE = (
    "check images.registry_url in {repo}'s .github/followup-bot.yml and that the registry "
    "answers from here"
)
FIX_REGISTRY_CREDENTIALS = (
    "set FOLLOWUP_BOT_REGISTRY_USERNAME and FOLLOWUP_BOT_REGISTRY_PASSWORD to credentials "
    "the registry accepts for pulling"
)
