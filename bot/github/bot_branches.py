"""The bot's own branch and its one PR: moved and opened without ever making two.

Every feature that proposes a change (pin bumps, migration sweeps) keeps one branch
and one open PR per key; these are the writes they share. Each looks before it
writes again: a rerun after a crash or a lost answer finds its own work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.github import changes, effects
from bot.github.changes import Repo

# The branches of the bot's proposals: landing treats a PR on one, opened by the bot,
# as the bot's to land once approved.
BUMP_PREFIX = "followup-bot/bump/"
MIGRATE_PREFIX = "followup-bot/migrate/"
REVERT_PREFIX = "followup-bot/revert/"
PROPOSAL_PREFIXES = (BUMP_PREFIX, MIGRATE_PREFIX, REVERT_PREFIX)


def proposal_key(head_ref: str) -> str | None:
    """What a proposal branch is for: a pin's name (``followup-bot/bump/<pin>``),
    ``migrate/<name>`` for a migration or ``revert/<step>`` for a partial revert (pin
    names have no ``/``, so they never meet); None for any other branch."""
    if head_ref.startswith(BUMP_PREFIX):
        return head_ref.removeprefix(BUMP_PREFIX)
    for prefix, kind in ((MIGRATE_PREFIX, "migrate/"), (REVERT_PREFIX, "revert/")):
        if head_ref.startswith(prefix):
            return kind + head_ref.removeprefix(prefix)
    return None


async def move_branch(
    gh: GitHubAPI,
    repo: Repo,
    branch: str,
    sha: str,
    open_pr: Mapping[str, Any] | None,
    *,
    resumed: bool,
) -> None:
    """Point ``branch`` at ``sha`` unless it is there already (a rerun's case)."""
    if open_pr is not None:
        if str(open_pr["head"]["sha"]) != sha:
            await changes.force_branch(gh, repo, branch, sha, exists=True)
        return
    # Only a resumed push may have moved the branch already; a fresh one just creates
    # it (force_branch handles a branch left over from a closed PR).
    current = await changes.ref_sha(gh, repo, branch) if resumed else None
    if current != sha:
        await changes.force_branch(gh, repo, branch, sha, exists=current is not None)


async def open_pull_number(
    gh: GitHubAPI, repo: Repo, branch: str, *, head: str | None = None
) -> int | None:
    """The open PR of ``branch`` (whose head is ``head``, if given)."""
    pulls = await changes.pulls_for_branch(gh, repo, branch)
    found = (
        int(pr["number"])
        for pr in pulls
        if pr["state"] == "open" and head in (None, pr["head"]["sha"])
    )
    return next(found, None)


async def open_pull(
    gh: GitHubAPI, repo: Repo, *, branch: str, base: str, sha: str, title: str, body: str
) -> int:
    """Open the PR of ``branch`` (at ``sha``) into ``base`` and return its number."""

    async def create() -> int:
        pull = await changes.create_pull(gh, repo, title=title, body=body, head=branch, base=base)
        return int(pull["number"])

    async def find() -> int | None:
        # A lost answer may hide a PR GitHub did open: the branch says.
        return await open_pull_number(gh, repo, branch, head=sha)

    try:
        return await effects.look_after_failure(create, find)
    except gidgethub.BadRequest as exc:
        # 422: a PR for this head appeared since we listed (a concurrent run or a
        # delayed listing); update that one rather than failing or duplicating.
        if int(exc.status_code) != 422:
            raise
        number = await open_pull_number(gh, repo, branch)
        if number is None:
            raise
        await changes.update_pull(gh, repo, number, title=title, body=body)
        return number


def resumable(intent: Mapping[str, Any] | None, *, digest: str, base: str) -> str | None:
    """The commit an unfinished run recorded (write-ahead, before the branch moved) for
    these very edits on this very base; None when there is none to finish."""
    found = intent or {}
    sha = found.get("sha")
    if found.get("digest") == digest and found.get("base") == base and isinstance(sha, str):
        return sha
    return None


def commit_trailers(message: str) -> dict[str, str]:
    """The ``Key: value`` trailers of the last paragraph of a commit message."""
    trailers = {}
    for line in message.strip().split("\n\n")[-1].splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key:
            trailers[key] = value.strip()
    return trailers


async def bots_commit_trailers(
    gh: GitHubAPI, repo: Repo, sha: str, bot_login: str
) -> dict[str, str] | None:
    """The trailers of commit ``sha`` if the bot committed it (None: a human's commit,
    or the bot's message amended or rebuilt by a human). How the bot recognises its own
    work when its store does not remember it."""
    commit = await changes.git_commit(gh, repo, sha)
    if not changes.is_bot_identity(commit.get("committer"), bot_login):
        return None
    return commit_trailers(str(commit.get("message") or ""))
