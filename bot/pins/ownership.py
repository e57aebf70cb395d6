"""Whose the bump branch is: the bot's, by what it remembers or by the commit's own
trailers and committer, or a human's, whose branch the bot never force-pushes.

Also: whether a human closed the bump PR for the very target the bot would
bump to (then the bot does not reopen it), and saying once on the PR that the
bot leaves a human's branch alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.config.models import PinConfig
from bot.github import effects
from bot.github.bot_branches import bots_commit_trailers
from bot.pins import text as bump_text
from bot.pins.facts import BumpScope
from bot.pins.state import Outcome, PinResult, PinState


async def ownership(
    ctx: BumpScope, pin: PinConfig, state: PinState, open_pr: Mapping[str, Any] | None
) -> str | None:
    """The upstream target of the open PR if its head is the bot's, else None."""
    if open_pr is None:
        return None
    pr_head = str(open_pr["head"]["sha"])
    intent = state.intent or {}
    if pr_head == intent.get("sha"):
        return str(intent["target"])  # a bump in progress: finished by the bump
    if pr_head in {state.head, state.pending}:
        return state.target
    # A head the bot does not remember (a new store, a crash, a human push): the
    # commit itself says whose it is.
    trailers = await bots_commit_trailers(ctx.gh, ctx.repo, pr_head, ctx.bot_login)
    if trailers is None or trailers.get(bump_text.TRAILER_PIN) != pin.name:
        return None
    state.head, state.target = pr_head, trailers.get(bump_text.TRAILER_TARGET)
    state.source = trailers.get(bump_text.TRAILER_FROM)
    return state.target


def closed_by_human_for(pr: Mapping[str, Any], head: str, state: PinState) -> bool:
    """Whether ``pr`` was closed unmerged, by a human, for the upstream commit ``head``."""
    if pr["state"] != "closed" or pr.get("merged_at"):
        return False
    if state.extra.get("closed_by_bot") == int(pr["number"]):
        return False
    target = bump_text.title_target(str(pr.get("title") or ""))
    return target is not None and head.startswith(target)


async def human_owned(
    ctx: BumpScope, pin: PinConfig, state: PinState, open_pr: Mapping[str, Any], branch: str
) -> PinResult:
    """Leave a human's branch alone, saying so once on its PR."""
    number = int(open_pr["number"])
    if not state.human_push_notified or state.pr != number:
        head = str(open_pr["head"]["sha"])
        body = bump_text.COMMENT_HUMAN_PUSH.format(branch=branch, head7=head[:7])
        marker = bump_text.MARKER_HUMAN_PUSH.format(pin=pin.name, head=head)
        await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
        state.human_push_notified, state.pr = True, number
    return PinResult(pin.name, Outcome.HUMAN_OWNED, "not force-pushing a human's branch", number)
