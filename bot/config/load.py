"""Reading a repository's config from its default branch, once per delivery.

Every handler of a delivery asks for the config; the first read is shared by the
others (``bot.service.delivery_memo``). Across deliveries it is kept by the default
branch's head commit: while main has not moved, the config has not changed, and the
default branch's head (which the bump flow reads anyway) is all that is asked.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.config.errors import ConfigError
from bot.config.models import RepoConfig
from bot.config.parse import CONFIG_PATH, parse_repo_config_bytes
from bot.github import changes
from bot.github.changes import Repo
from bot.github.default_branch import default_branch_head
from bot.service.blocking import BlockingRunner
from bot.service.delivery_memo import memoized
from bot.store.kinds import Kind
from bot.store.protocol import Store

log = logging.getLogger(__name__)

MEMO_KIND = "config"
CACHE_KIND = "config-at"


async def load_config(
    gh: GitHubAPI,
    store: Store,
    blocking: BlockingRunner,
    repo: Repo,
    *,
    cache: MutableMapping[Any, Any],
) -> RepoConfig | None:
    """The repo's config from its default branch; None (and a record) when absent or broken.

    ``cache``: the services' short-lived cache, where a config is kept by main's head.
    """
    return await memoized(
        (MEMO_KIND, repo.full_name), lambda: _load_at_head(gh, store, blocking, repo, cache)
    )


async def _load_at_head(
    gh: GitHubAPI,
    store: Store,
    blocking: BlockingRunner,
    repo: Repo,
    cache: MutableMapping[Any, Any],
) -> RepoConfig | None:
    head = await default_branch_head(gh, store, repo)
    key = (CACHE_KIND, repo.full_name, head.sha)
    if key not in cache:
        cache[key] = await _load(gh, store, blocking, repo, head.sha)
    found: RepoConfig | None = cache[key]
    return found


async def _load(
    gh: GitHubAPI, store: Store, blocking: BlockingRunner, repo: Repo, ref: str
) -> RepoConfig | None:
    raw = await changes.read_file(gh, repo, CONFIG_PATH, ref)
    if raw is None:
        log.info("%s has no %s; nothing to do", repo.full_name, CONFIG_PATH)
        return None
    try:
        config = await blocking.run(parse_repo_config_bytes, raw, filename=CONFIG_PATH)
    except ConfigError as exc:
        # A broken config must never crash the bot or cause writes: report it and stop.
        log.warning("config error in %s:\n%s", repo.full_name, exc)
        await store.put_state(Kind.CONFIG, repo.full_name, {"error": str(exc)})
        return None
    await store.delete_state(Kind.CONFIG, repo.full_name)
    return config
