"""The bump PR: opening it (without ever opening two), and closing it when the pin
needs no bump any more (the bot's PR only; a human's is theirs to close)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.config.models import PinConfig
from bot.github import bot_branches, changes, effects
from bot.pins import text as bump_text
from bot.pins.facts import BumpScope
from bot.pins.ownership import ownership
from bot.pins.snapshot import snapshot
from bot.pins.state import Outcome, PinResult, PinState
from bot.store.kinds import Kind, pin_key


async def open_pull(ctx: BumpScope, branch: str, text: bump_text.BumpText, sha: str) -> int:
    """Open the bump PR of ``branch`` at ``sha`` and return its number."""
    return await bot_branches.open_pull(
        ctx.gh,
        ctx.repo,
        branch=branch,
        base=ctx.base.name,
        sha=sha,
        title=text.title,
        body=text.body,
    )


async def close_not_needed(
    ctx: BumpScope,
    pin: PinConfig,
    state: PinState,
    open_pr: Mapping[str, Any] | None,
    pinned: str,
    head: str,
    *,
    current: bool,
) -> PinResult:
    """The pin is at (``current``) or ahead of upstream's head: close the bot's PR, if any."""
    outcome = Outcome.CURRENT
    await snapshot(ctx, pin, pinned=pinned, upstream_head=head, behind=0, oldest=None)
    if open_pr is None:
        return PinResult(pin.name, outcome, f"pin {bump_text.short(pinned)} needs no bump")
    number = int(open_pr["number"])
    if await ownership(ctx, pin, state, open_pr) is None and state.head is not None:
        # A human owns the branch; closing their PR is their call, not ours.
        return PinResult(pin.name, outcome, "pin current; human-owned PR left open", number)
    body = bump_text.COMMENT_ALREADY_CURRENT.format(
        file=pin.file,
        dependency=pin.dependency,
        value7=bump_text.short(pinned),
        where=bump_text.current_where(pin, current=current),
        head7=bump_text.short(head),
    )
    marker = bump_text.MARKER_ALREADY_CURRENT.format(pin=pin.name)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
    state.intent = None
    # Recorded before the close: a crash after it must not read as a human's close.
    state.extra["closed_by_bot"] = number
    await ctx.store.put_state(Kind.BUMP, pin_key(ctx.repo.full_name, pin.name), state.dump())
    await changes.update_pull(ctx.gh, ctx.repo, number, state="closed")
    detail = f"pin {bump_text.short(pinned)} needs no bump"
    return PinResult(pin.name, Outcome.CLOSED, detail, number)
