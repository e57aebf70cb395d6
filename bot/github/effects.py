"""Creations that GitHub cannot make idempotent for us: each looks for itself first.

A comment POST answered 502 may or may not have been applied ("ghost write"),
and a crash between a POST and recording it leaves the same doubt. So every
comment the bot posts carries a hidden marker, and its record goes through two
states: *pending* (written before the POST) and *posted* (written once GitHub
confirmed it). Whoever finds a pending record, or a failed POST, looks for the
marker among the PR's comments before posting again. The record is keyed by
the marker, so the marker alone says which effect it is.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from gidgethub.abc import GitHubAPI

from bot.core.errors import is_transient
from bot.github import changes
from bot.github.changes import Repo
from bot.store.kinds import Kind
from bot.store.protocol import Store

log = logging.getLogger(__name__)

T = TypeVar("T")

LOG_FOUND = "%s#%d: a comment with %s was already posted (id %s); not posting again"


def comment_key(repo: Repo, number: int, marker: str) -> str:
    return f"{repo.full_name}#{number}#{marker}"


async def find_comment(gh: GitHubAPI, repo: Repo, number: int, marker: str) -> int | None:
    """The id of the bot's comment on ``number`` that carries ``marker``, if there is one."""
    found: int | None = None
    async for comment in gh.getiter(
        "/repos/{owner}/{repo}/issues/{number}/comments{?per_page}",
        url_vars=repo.vars(number=str(number), per_page="100"),
    ):
        user = comment.get("user") or {}
        if user.get("type") == "Bot" and marker in str(comment.get("body") or ""):
            found = int(comment["id"])  # the newest one wins
    return found


async def post_once(
    gh: GitHubAPI, store: Store, repo: Repo, number: int, body: str, marker: str
) -> int:
    """Post ``body`` + ``marker`` on ``number`` unless it was posted already; its id."""
    key = comment_key(repo, number, marker)
    doc = await store.get_state(Kind.POSTED_COMMENT, key)
    if doc is not None and not doc.get("pending"):
        return int(doc.get("id") or 0)
    if doc is not None:  # a previous attempt may have posted it: look before posting
        found = await find_comment(gh, repo, number, marker)
        if found is not None:
            log.info(LOG_FOUND, repo.full_name, number, marker, found)
            return await _posted(store, key, repo, number, marker, found)
    else:
        await store.put_state(Kind.POSTED_COMMENT, key, {"pending": True, "pr": number})
    comment_id = await look_after_failure(
        lambda: changes.comment(gh, repo, number, f"{body}\n\n{marker}"),
        lambda: find_comment(gh, repo, number, marker),
    )
    return await _posted(store, key, repo, number, marker, comment_id)


async def _posted(
    store: Store, key: str, repo: Repo, number: int, marker: str, comment_id: int
) -> int:
    await store.put_state(Kind.POSTED_COMMENT, key, {"pr": number, "id": comment_id})
    return comment_id


async def look_after_failure(
    create: Callable[[], Awaitable[T]], find: Callable[[], Awaitable[T | None]]
) -> T:
    """``create()``; if it fails in a way that may hide a success, ``find()`` the effect.

    A transient failure (5xx, timeout, dropped connection) does not prove the
    write was not applied: if ``find`` sees it, that is the answer; otherwise
    the original failure stands and the caller's retry will look again.
    """
    try:
        return await create()
    except Exception as exc:
        if not is_transient(exc):
            raise
        found = await find()
        if found is None:
            raise
        return found
