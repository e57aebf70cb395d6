"""When upstream rewrote its history: the commit the bot's open bump PR pins is no
longer on the tracked branch, so the bot says so once and leaves the PR to humans
rather than guess a bump."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.config.models import PinConfig
from bot.github import effects
from bot.github.changes import Repo
from bot.pins import text as bump_text
from bot.pins.facts import BumpScope, compare
from bot.pins.state import Outcome, PinResult, PinState

REASON_REWRITTEN = (
    "#{number} pins {old7}, which upstream history no longer has on {upstream}@{branch}; "
    "left to humans (close it for a fresh bump)"
)


def bots_target(state: PinState, open_pr: Mapping[str, Any] | None) -> str | None:
    """The upstream commit the bot's open PR pins (None: no PR of the bot's, or not known)."""
    if open_pr is None or not state.target or str(open_pr["head"]["sha"]) != state.head:
        return None
    return state.target


async def left_branch(
    ctx: BumpScope, upstream: Repo, comparison: Mapping[str, Any], old: str, new: str
) -> bool:
    """Whether ``old`` is no longer in the history of the branch head ``new`` (upstream
    rewrote its history). Usually the compare on the way to the target already lists
    ``old``; otherwise one more compare decides."""
    if old == new or any(c.get("sha") == old for c in comparison.get("commits") or []):
        return False
    between = await compare(ctx.gh, upstream, old, new)
    return between is None or between["status"] not in ("ahead", "identical")


async def rewritten(
    ctx: BumpScope, pin: PinConfig, open_pr: Mapping[str, Any], old: str, head: str
) -> PinResult:
    """Say once on the PR that its target left the branch; the PR is the humans' now."""
    number = int(open_pr["number"])
    body = bump_text.COMMENT_REWRITTEN.format(
        old7=old[:7], upstream=pin.upstream, branch=pin.branch, head7=head[:7]
    )
    marker = bump_text.MARKER_REWRITTEN.format(pin=pin.name, target=old)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    reason = REASON_REWRITTEN.format(
        number=number, old7=old[:7], upstream=pin.upstream, branch=pin.branch
    )
    return PinResult(pin.name, Outcome.FAILED, reason, number)
