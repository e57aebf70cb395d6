"""The default branch's head, its name remembered between deliveries."""

from __future__ import annotations

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.github import changes
from bot.github.changes import BranchHead, Repo
from bot.store.kinds import Kind
from bot.store.protocol import Store


async def default_branch_head(
    gh: GitHubAPI, store: Store, repo: Repo, *, refresh: bool = False
) -> BranchHead:
    """The default branch's head; the branch name is remembered between deliveries."""
    known = None if refresh else await store.get_state(Kind.REPO, repo.full_name)
    if known is not None:
        try:
            return await changes.branch_head(gh, repo, str(known["default_branch"]))
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
            # The default branch was renamed since: learn the new name below.
    branch = await changes.default_branch(gh, repo)
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
