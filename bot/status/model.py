"""The status page's data: plain values the reader fills and the renderer shows."""

from __future__ import annotations

from dataclasses import dataclass

from bot.dashboard.red_text import RedRow
from bot.dashboard.routing_text import MigrationRow
from bot.dashboard.text import EntryRow, PinRow
from bot.retry.report import FlakyStep

__all__ = [
    "EntryRow",
    "FailureRow",
    "FlakyStep",
    "MigrationRow",
    "PinRow",
    "RedRow",
    "RepoStatus",
    "StatusData",
]


@dataclass(frozen=True)
class RepoStatus:
    """One configured repository as the store knows it."""

    repo: str
    config_errors: tuple[str, ...] = ()
    pins: tuple[PinRow, ...] = ()
    entries: tuple[EntryRow, ...] = ()
    migrations: tuple[MigrationRow, ...] = ()  # only those with a PR still open
    red: tuple[RedRow, ...] = ()
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
class StatusData:
    generated_at: float
    repos: tuple[RepoStatus, ...] = ()
    failures: tuple[FailureRow, ...] = ()
