"""Release notes published after a tag pin's bump PR was opened: the PR gains the link.

Upstream often pushes a tag first and publishes its release minutes later. The bump
opened on the tag's ``create`` webhook has no notes to link then; once the PR is at
its target the sync has nothing to rebuild, so it asks, on every sync of the pin until
the PR links notes, whether the target's release exists now (the ``release`` webhook
is one such sync; a reconcile tick heals a missed one). Found: the PR body gains the
link beside the compare link, in one edit; nothing else is rebuilt (the bump commit
never carried the link). What the PR links is remembered per target once GitHub
confirmed the edit, and a rerun reads the body before editing, so the edit is made once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.config.models import PinConfig
from bot.github import changes
from bot.github.changes import Repo
from bot.pins import text as bump_text
from bot.pins.facts import BumpScope
from bot.pins.state import Outcome, PinResult, PinState
from bot.pins.tags import release_url

NOTED = "release_notes"  # the pin state's record: the target whose notes the PR links
DETAIL_NOTES_ADDED = "release notes of {tag} linked"


def remember(state: PinState, target: str, url: str | None) -> None:
    """After a bump: whether its PR body links ``target``'s release notes."""
    if url is None:
        state.extra.pop(NOTED, None)
    else:
        state.extra[NOTED] = target


async def add_late_notes(
    ctx: BumpScope, pin: PinConfig, state: PinState, open_pr: Mapping[str, Any], tag: str
) -> PinResult | None:
    """Link ``tag``'s release notes in the bot's open PR at ``tag`` if they were published
    since; None when there is nothing to do (no release yet, or linked already)."""
    if state.extra.get(NOTED) == tag:
        return None
    url = await release_url(ctx.gh, Repo.parse(pin.upstream), tag)
    if url is None:
        return None
    number = int(open_pr["number"])
    # The PR listing a sync reads may carry no body (the GraphQL one does not): ask.
    pull = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}", url_vars=ctx.repo.vars(number=str(number))
    )
    body = bump_text.with_release_notes(str(pull.get("body") or ""), url)
    if body is not None:
        await changes.update_pull(ctx.gh, ctx.repo, number, body=body)
    state.extra[NOTED] = tag  # kept by the sync once the edit is confirmed
    if body is None:
        return None
    return PinResult(pin.name, Outcome.UPDATED, DETAIL_NOTES_ADDED.format(tag=tag), number)
