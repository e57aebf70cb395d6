"""Reading a repository's config from its default branch, once per delivery.

Every handler of a delivery asks for the config; the first read is shared by the
others (``bot.core.delivery_memo``). Across deliveries it is kept by the default
branch's head commit: while main has not moved, the config has not changed, and the
default branch's head (which the bump flow reads anyway) is all that is asked.

Buildkite's events come by the hundred per build and say nothing of main's head, so
they take the config last read at a head (``recent_config``) without asking GitHub
anything, for at most ``RECENT_MAX_AGE`` seconds. Every read at a head renews it: each
reconcile tick, and the sync each push to the default branch hands on (a push that
touches the config included). That one-entry memory is per process, in the services'
bounded cache; a replica that saw neither the push nor a tick reads the head again once
its entry is older than ``RECENT_MAX_AGE``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.config.errors import ConfigError
from bot.config.models import RepoConfig
from bot.config.parse import CONFIG_PATH, parse_repo_config_bytes
from bot.core.blocking import BlockingRunner
from bot.core.delivery_memo import memoized
from bot.github import changes
from bot.github.changes import Repo
from bot.github.default_branch import default_branch_head
from bot.store.kinds import Kind
from bot.store.protocol import Store

log = logging.getLogger(__name__)

MEMO_KIND = "config"
CACHE_KIND = "config-at"
RECENT_KIND = "config-recent"
# How long a config read at main's head serves Buildkite's events without a new look at
# the head: the reconcile interval's default, so a replica that handles no tick and no
# push is never further behind than one that handles them all would be.
RECENT_MAX_AGE = 300.0


@dataclass(frozen=True)
class Recent:
    """The config last read at a head of the default branch, and when."""

    sha: str
    config: RepoConfig | None
    read_at: float


async def load_config(
    gh: GitHubAPI,
    store: Store,
    blocking: BlockingRunner,
    repo: Repo,
    *,
    cache: MutableMapping[Any, Any],
    clock: Callable[[], float] = time.monotonic,
) -> RepoConfig | None:
    """The repo's config from its default branch; None (and a record) when absent or broken.

    ``cache``: the services' short-lived cache, where a config is kept by main's head.
    ``clock``: the process's own (how old ``recent_config``'s entry is, not a date).
    """
    return await memoized(
        (MEMO_KIND, repo.full_name), lambda: _load_at_head(gh, store, blocking, repo, cache, clock)
    )


async def recent_config(
    gh: GitHubAPI,
    store: Store,
    blocking: BlockingRunner,
    repo: Repo,
    *,
    cache: MutableMapping[Any, Any],
    clock: Callable[[], float] = time.monotonic,
) -> RepoConfig | None:
    """The config last read at main's head when that was under ``RECENT_MAX_AGE`` seconds
    ago (no request at all); else ``load_config``'s answer."""
    found = cache.get((RECENT_KIND, repo.full_name))
    if isinstance(found, Recent) and 0.0 <= clock() - found.read_at < RECENT_MAX_AGE:
        return found.config
    return await load_config(gh, store, blocking, repo, cache=cache, clock=clock)


async def _load_at_head(
    gh: GitHubAPI,
    store: Store,
    blocking: BlockingRunner,
    repo: Repo,
    cache: MutableMapping[Any, Any],
    clock: Callable[[], float],
) -> RepoConfig | None:
    head = await default_branch_head(gh, store, repo)
    key = (CACHE_KIND, repo.full_name, head.sha)
    if key not in cache:
        cache[key] = await _load(gh, store, blocking, repo, head.sha)
    found: RepoConfig | None = cache[key]
    cache[(RECENT_KIND, repo.full_name)] = Recent(head.sha, found, clock())
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
