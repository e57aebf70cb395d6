"""Everything a handler may use, built once per app and passed in as an argument.

Handlers never import clients or read the environment themselves; they get a
``Services`` so tests can run them against the sandbox with no global state.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
from cachetools import TTLCache

from bot.context.followups import FollowUps
from bot.core.blocking import BlockingRunner
from bot.core.locks import KeyedLocks
from bot.core.metrics import Metrics
from bot.github.changes import Repo

if TYPE_CHECKING:
    from bot.buildkite.client import BuildkiteClient
    from bot.core.settings import Settings
    from bot.github.client import GitHubApp
    from bot.registry.pool import Registries
    from bot.store.protocol import Store


@dataclass(frozen=True)
class Services:
    settings: Settings
    session: aiohttp.ClientSession
    store: Store
    blocking: BlockingRunner
    github: GitHubApp
    clock: Callable[[], float]
    locks: KeyedLocks
    buildkite: BuildkiteClient | None = None  # None: the Buildkite side is not configured
    registries: Registries | None = None  # the CI image registries (None: not checked)
    # Short-lived reads shared between deliveries (main-branch history, log signatures).
    cache: MutableMapping[Any, Any] = field(default_factory=lambda: TTLCache(1024, 600))
    # Fan-out: a handler's follow-up deliveries go back into the inbox.
    followups: FollowUps = field(default_factory=FollowUps)
    # This app's Prometheus metrics (each Services its own registry unless given one).
    metrics: Metrics = field(default_factory=Metrics)

    def served(self, full_name: str) -> Repo | None:
        """The repository as configured (FOLLOWUP_BOT_REPOSITORIES), if the bot serves it;
        GitHub names are case-insensitive."""
        wanted = full_name.lower()
        name = next((r for r in self.settings.repositories if r.lower() == wanted), None)
        return Repo.parse(name) if name is not None else None
