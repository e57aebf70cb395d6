"""The one reply to a command comment (help, refusals, pin commands, retry-flaky)."""

from __future__ import annotations

from gidgethub.abc import GitHubAPI

from bot.github import effects
from bot.github.changes import Repo
from bot.store.protocol import Store

MARKER_REPLY = "<!-- followup-bot:reply comment={comment} -->"


async def reply_once(
    gh: GitHubAPI, store: Store, repo: Repo, pr: int, comment_id: int, body: str
) -> None:
    """One reply per command comment, keyed by the command's comment id."""
    await effects.post_once(gh, store, repo, pr, body, MARKER_REPLY.format(comment=comment_id))
