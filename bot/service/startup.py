"""What ``followup-bot serve`` says it serves, and what it will not start without.

An operator reading the first log line should know which repositories, which
Buildkite side and which schedules this process runs, so a mistyped variable is
seen at start-up rather than as silence hours later. Secrets are never shown.
"""

from __future__ import annotations

from bot.core.settings import Settings
from bot.store.access import redacted

NO_REPOSITORIES = (
    "FOLLOWUP_BOT_REPOSITORIES is empty: the bot would accept webhooks and act on "
    "nothing; set it to owner/name[,owner/name...]"
)
SUMMARY = (
    "serving {repositories}; GitHub API {github}; Buildkite API {buildkite_api}; "
    "Buildkite webhooks {buildkite_webhooks}; reconcile {reconcile}; retention {retention:g} "
    "days; database {database}; {workers} workers; listening on {host}:{port}"
)
OFF = "off"


def refusal(settings: Settings) -> str | None:
    """Why ``serve`` must not start with these settings, or None."""
    return NO_REPOSITORIES if not settings.repositories else None


def summary(settings: Settings) -> str:
    """One line for the log: everything this process serves, and how."""
    if settings.buildkite_webhook_secret is not None:
        webhooks = "on (signature)"
    elif settings.buildkite_webhook_token is not None:
        webhooks = "on (token)"
    else:
        webhooks = OFF
    interval = settings.reconcile_interval
    return SUMMARY.format(
        repositories=", ".join(settings.repositories),
        github=settings.github_api_url,
        buildkite_api=settings.buildkite_api_url if settings.buildkite_api_token else OFF,
        buildkite_webhooks=webhooks,
        reconcile=f"every {interval:g} s" if interval > 0 else OFF,
        retention=settings.retention_days,
        database=redacted(settings.database),
        workers=settings.workers,
        host=settings.host,
        port=settings.port,
    )
