"""One repository, for one delivery: the one context every feature flow receives.

A handler builds it once (installation client, the config read from the default
branch, the shared store, locks and clients) and hands it to a feature package;
the flows read what they need by name. Replaces the per-feature context classes,
which carried the same fields in five different orders.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.buildkite.client import BuildkiteClient
from bot.config.models import AllowlistConfig, LandingConfig, RepoConfig
from bot.context.config_load import load_config, recent_config
from bot.context.services import Services
from bot.core.blocking import BlockingRunner
from bot.core.locks import KeyedLocks
from bot.github.changes import DEFAULT_BOT_LOGIN, Repo
from bot.registry.pool import Registries
from bot.store.protocol import Store

ERROR_NOT_CONFIGURED = "{repo}: {what} is not configured"


@dataclass(frozen=True, kw_only=True)
class RepoScope:
    gh: GitHubAPI
    store: Store
    locks: KeyedLocks
    blocking: BlockingRunner  # parsing and editing files is CPU work: off the loop
    repo: Repo
    config: RepoConfig
    clock: Callable[[], float] = time.time
    bot_login: str = DEFAULT_BOT_LOGIN
    bk: BuildkiteClient | None = None  # None: the Buildkite side is not configured
    registries: Registries | None = None  # the CI image registries
    # Short-lived reads shared between deliveries (main-branch history, log signatures).
    cache: MutableMapping[Any, Any] = field(default_factory=dict)

    # The sections a feature cannot run without: the handler checked them before
    # calling in, so a missing one here is a bug, said plainly.

    @property
    def allowlist(self) -> AllowlistConfig:
        if self.config.allowlist is None:
            raise RuntimeError(self._missing("allowlist"))
        return self.config.allowlist

    @property
    def landing(self) -> LandingConfig:
        if self.config.landing is None:
            raise RuntimeError(self._missing("landing"))
        return self.config.landing

    @property
    def buildkite(self) -> BuildkiteClient:
        if self.bk is None:
            raise RuntimeError(self._missing("the Buildkite API"))
        return self.bk

    def _missing(self, what: str) -> str:
        return ERROR_NOT_CONFIGURED.format(repo=self.repo.full_name, what=what)


def scope_of(services: Services, gh: GitHubAPI, repo: Repo, config: RepoConfig) -> RepoScope:
    return RepoScope(
        gh=gh,
        store=services.store,
        locks=services.locks,
        blocking=services.blocking,
        repo=repo,
        config=config,
        clock=services.clock,
        bot_login=services.settings.bot_login,
        bk=services.buildkite,
        registries=services.registries,
        cache=services.cache,
    )


async def repo_scope(services: Services, repo: Repo, *, recent: bool = False) -> RepoScope | None:
    """The scope of ``repo``; None when it has no usable config (recorded by load_config).

    ``recent``: a config read at main's head a few minutes ago will do, so no request
    (``bot.context.config_load.recent_config``; Buildkite's events, which come by the hundred).
    """
    gh = await services.github.repo_client(repo.full_name)
    read = recent_config if recent else load_config
    config = await read(gh, services.store, services.blocking, repo, cache=services.cache)
    if config is None:
        return None
    return scope_of(services, gh, repo, config)
