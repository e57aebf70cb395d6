"""Everything a handler may use, built once per app and passed in as an argument.

Handlers never import clients or read the environment themselves; they get a
``Services`` so tests can run them against the sandbox with no global state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp

from bot.blocking import BlockingRunner
from bot.locks import KeyedLocks

if TYPE_CHECKING:
    from bot.buildkite import BuildkiteClient
    from bot.github import GitHubApp
    from bot.settings import Settings
    from bot.store import Store


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
