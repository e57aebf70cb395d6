"""The status page's data: plain values the reader fills and the renderer shows."""

from __future__ import annotations

from dataclasses import dataclass

from bot.dashboard.red_text import RedRow
from bot.dashboard.routing_text import MigrationRow
from bot.dashboard.text import EntryRow, PinRow
from bot.retry.report import FlakyStep
from bot.store.protocol import ReplicaSeen

__all__ = [
    "ActivityRow",
    "EntryRow",
    "EntryStatus",
    "FailureRow",
    "FlakyStep",
    "Linked",
    "MigrationRow",
    "MigrationStatus",
    "PinRow",
    "PinStatus",
    "RedRow",
    "RedStatus",
    "ReplicaSeen",
    "RepoStatus",
    "ServiceStatus",
    "StatusData",
]


@dataclass(frozen=True)
class Linked:
    """A value shown on the page, with its web address when one can be built."""

    text: str
    href: str | None = None


@dataclass(frozen=True)
class PinStatus:
    row: PinRow  # what the dashboard shows of the pin
    mode: str  # PinMode: what the bot does with the pin now
    pr_state: str | None  # "open" | "merged" | "closed" (None: no PR)
    pr: Linked | None = None
    pinned: Linked | None = None
    upstream_head: Linked | None = None


@dataclass(frozen=True)
class EntryStatus:
    row: EntryRow
    prune: Linked | None = None  # the open PR that removes the entry


@dataclass(frozen=True)
class MigrationStatus:
    row: MigrationRow
    pr: Linked | None = None


@dataclass(frozen=True)
class RedStatus:
    row: RedRow
    since: Linked | None = None
    issue: Linked | None = None
    revert_pr: Linked | None = None


@dataclass(frozen=True)
class RepoStatus:
    """One configured repository as the store knows it."""

    repo: str
    config_errors: tuple[str, ...] = ()
    pins: tuple[PinStatus, ...] = ()
    entries: tuple[EntryStatus, ...] = ()
    migrations: tuple[MigrationStatus, ...] = ()  # only those with a PR still open
    red: tuple[RedStatus, ...] = ()
    flakiest: tuple[FlakyStep, ...] = ()


@dataclass(frozen=True)
class FailureRow:
    """A delivery the service gave up on."""

    delivery_id: str
    source: str
    event: str
    subject: str
    received_at: float
    attempts: int
    error: str


@dataclass(frozen=True)
class ActivityRow:
    """One thing the bot did, as its state documents last recorded it."""

    at: float
    repo: str
    what: str
    links: tuple[Linked, ...] = ()


@dataclass(frozen=True)
class ServiceStatus:
    """The service itself: who serves, how deep the inbox is, when it last ticked."""

    replicas: tuple[ReplicaSeen, ...] | None  # None: one process serves (SQLite)
    queued: int
    running: int
    oldest_queued_at: float | None
    last_tick_at: float | None  # the last reconcile tick put in the inbox
    last_tick_status: str | None
    rate_limits: tuple[tuple[str, float], ...] = ()  # (service, requests left)


@dataclass(frozen=True)
class StatusData:
    generated_at: float
    repos: tuple[RepoStatus, ...] = ()
    failures: tuple[FailureRow, ...] = ()
    service: ServiceStatus | None = None
    activity: tuple[ActivityRow, ...] = ()
