"""GitHub's auto-merge, where the repository allows it: enabled for the approved head, so
GitHub merges it once its required checks pass (the bot merges by itself elsewhere)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import gidgethub

from bot.context.scope import RepoScope
from bot.landing.state import LandingState, save_state

log = logging.getLogger(__name__)

GRAPHQL_METHODS = {"merge": "MERGE", "squash": "SQUASH", "rebase": "REBASE"}

ENABLE_AUTO_MERGE = """
mutation($pr: ID!, $method: PullRequestMergeMethod!, $head: GitObjectID!) {
  enablePullRequestAutoMerge(
    input: {pullRequestId: $pr, mergeMethod: $method, expectedHeadOid: $head}
  ) {
    pullRequest { number }
  }
}
"""


async def allows_auto_merge(ctx: RepoScope) -> bool:
    data = await ctx.gh.getitem("/repos/{owner}/{repo}", url_vars=ctx.repo.vars())
    return data.get("allow_auto_merge") is True


async def enable_auto_merge(
    ctx: RepoScope, number: int, state: LandingState, pull: Mapping[str, Any]
) -> None:
    head = str(pull["head"]["sha"])
    try:
        await ctx.gh.graphql(
            ENABLE_AUTO_MERGE,
            pr=str(pull["node_id"]),
            method=GRAPHQL_METHODS[ctx.landing.merge_method],
            head=head,
        )
    except gidgethub.GraphQLException as exc:
        # E.g. the PR can merge right now ("clean status") or the branch has no
        # required checks: then the bot merges it itself once it is green.
        log.info("%s#%d: auto-merge not enabled: %s", ctx.repo.full_name, number, exc)
        return
    state.auto_merge_for = head
    await save_state(ctx, number, state)
