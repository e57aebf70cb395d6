"""The default branch's head, its name remembered between deliveries."""

from __future__ import annotations

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.core.delivery_memo import forget, memoized
from bot.github import changes
from bot.github.changes import BranchHead, Repo
from bot.store.kinds import Kind
from bot.store.protocol import Store

MEMO_KIND = "default-branch-head"


async def default_branch_head(
    gh: GitHubAPI, store: Store, repo: Repo, *, refresh: bool = False
) -> BranchHead:
    """The default branch's head; the branch name is remembered between deliveries, the
    head read once per delivery (``refresh`` re-learns the name too, once)."""
    key = (MEMO_KIND, repo.full_name, refresh)
    return await memoized(key, lambda: _read_head(gh, store, repo, refresh=refresh))


def forget_head(repo: Repo) -> None:
    """The default branch just moved (the bot merged into it): read it again."""
    for refresh in (False, True):
        forget((MEMO_KIND, repo.full_name, refresh))


async def _read_head(gh: GitHubAPI, store: Store, repo: Repo, *, refresh: bool) -> BranchHead:
    known = await store.get_state(Kind.REPO, repo.full_name)
    if known is not None and not refresh:
        try:
            return await changes.branch_head(gh, repo, str(known["default_branch"]))
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
            # The default branch was renamed since: learn the new name below.
    branch = await changes.default_branch(gh, repo)
    if known is None or known.get("default_branch") != branch:  # an idle tick writes nothing
        await store.put_state(Kind.REPO, repo.full_name, {"default_branch": branch})
    return await changes.branch_head(gh, repo, branch)


async def default_branch_name(gh: GitHubAPI, store: Store, repo: Repo) -> str:
    """The default branch's name: remembered, so most calls ask GitHub nothing (a rename
    is learnt the next time a head is read through ``default_branch_head``)."""
    known = await store.get_state(Kind.REPO, repo.full_name)
    if known is not None and isinstance(known.get("default_branch"), str):
        return str(known["default_branch"])
    branch = await changes.default_branch(gh, repo)
    await store.put_state(Kind.REPO, repo.full_name, {"default_branch": branch})
    return branch
