"""Reading a repository's config from its default branch, once per delivery."""

from __future__ import annotations

import logging

from gidgethub.abc import GitHubAPI

from bot.config.errors import ConfigError
from bot.config.models import RepoConfig
from bot.config.parse import CONFIG_PATH, parse_repo_config_bytes
from bot.github import changes
from bot.github.changes import Repo
from bot.service.blocking import BlockingRunner
from bot.store.kinds import Kind
from bot.store.protocol import Store

log = logging.getLogger(__name__)


async def load_config(
    gh: GitHubAPI, store: Store, blocking: BlockingRunner, repo: Repo
) -> RepoConfig | None:
    """The repo's config from its default branch; None (and a record) when absent or broken."""
    raw = await changes.read_file(gh, repo, CONFIG_PATH, None)
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
