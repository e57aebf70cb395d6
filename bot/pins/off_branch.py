"""Why a branch pin the tracked branch does not reach is refused: its commit is on
another live branch upstream, or on none (upstream rewrote its history).

The compare of the pinned commit with the tracked branch says only ``diverged``; that
alone does not tell a side branch from a rewrite. The bot lists upstream's branches
(one request, a free 304 while none moved) and asks ``compare(branch head...pinned)``
of each other branch until one has the pin (``behind``: the pin is in its history).
What it learns is kept in the pin's state per branch head (``compared.Whereabouts``),
so a refused pin costs the listing and a compare per branch that moved since, not a
compare per branch per sync; at most ``MAX_LOOKS_PER_SYNC`` compares a sync, so an
upstream with many branches is looked through over a few syncs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.config.models import PinConfig
from bot.github.changes import Repo
from bot.pins import compared
from bot.pins import text as bump_text
from bot.pins.facts import BumpScope, compare
from bot.pins.state import PinState

WHEREABOUTS = "whereabouts"  # the pin state's record of where the pinned commit is
MAX_LOOKS_PER_SYNC = 20
BRANCH_REFS = "refs/heads/"

_UNREACHABLE = (
    "pinned {value7} is not an ancestor of {upstream}@{branch} ({head7}): compare says {status}"
)
REASON_OTHER_BRANCH = (
    _UNREACHABLE + "; it is not on the tracked branch but on upstream's branch `{holder}`, "
    "so the bot will not guess a bump (follow `{holder}` with `branch:`, or pin a commit "
    "of `{branch}`)"
)
REASON_NO_BRANCH = (
    _UNREACHABLE + ", and no branch of {upstream} has it any more: upstream history was "
    "rewritten, so the bot will not guess a bump"
)
REASON_NOT_YET = (
    _UNREACHABLE + "; it is not on the tracked branch, and {left} other branch(es) of "
    "{upstream} are still to be looked at for it; the bot will not guess a bump"
)
REASON_TRACKED_BRANCH = (
    _UNREACHABLE + "; the pin is on the tracked branch but beside the chosen {head7}, "
    "not before it, so the bot will not bump sideways"
)
REASONS = {
    compared.Where.OTHER_BRANCH: REASON_OTHER_BRANCH,
    compared.Where.TRACKED_BRANCH: REASON_TRACKED_BRANCH,
    compared.Where.NO_BRANCH: REASON_NO_BRANCH,
    compared.Where.NOT_YET: REASON_NOT_YET,
}


async def refusal(
    ctx: BumpScope,
    pin: PinConfig,
    state: PinState,
    pinned: str,
    target: str,
    comparison: Mapping[str, Any],
) -> str:
    """The reason a pin ``comparison`` (``pinned...target``) found off the tracked branch
    is refused, after looking where else upstream has it."""
    upstream = Repo.parse(pin.upstream)
    heads = await branch_heads(ctx.gh, upstream)
    known = compared.Whereabouts.load(state.extra.get(WHEREABOUTS), pinned).kept(heads)
    # The compare that refused the pin was with the tracked branch's head, unless a
    # maintainer chose an older commit of the branch: then the branch is asked too.
    asked = pin.branch if heads.get(pin.branch) == target else None
    holder = known.holder(heads)
    todo = [] if holder is not None else known.to_look_at(heads, asked)
    for branch in todo[:MAX_LOOKS_PER_SYNC]:
        # Only its status matters: one commit a page keeps a long range's answer small.
        answer = await compare(ctx.gh, upstream, heads[branch], pinned, page=(1, 1))
        known = known.seen(branch, heads[branch], answer)
        holder = known.holder(heads)
        if holder is not None:
            break
    state.extra[WHEREABOUTS] = known.dump()
    left = len(known.to_look_at(heads, asked)) if holder is None else 0
    return REASONS[compared.where(holder, left, pin.branch)].format(
        value7=bump_text.short(pinned),
        upstream=pin.upstream,
        branch=pin.branch,
        head7=bump_text.short(target),
        status=comparison.get("status"),
        holder=holder,
        left=left,
    )


def forget(state: PinState) -> None:
    """The pin is on the tracked branch again: what was learnt of it is moot."""
    state.extra.pop(WHEREABOUTS, None)


async def branch_heads(gh: GitHubAPI, upstream: Repo) -> dict[str, str]:
    """Every branch of ``upstream`` and its head (one listing; GitHub pages it if long)."""
    heads: dict[str, str] = {}
    async for ref in gh.getiter(
        "/repos/{owner}/{repo}/git/matching-refs/{+ref}", url_vars=upstream.vars(ref="heads")
    ):
        name = str(ref.get("ref") or "")
        sha = (ref.get("object") or {}).get("sha")
        if name.startswith(BRANCH_REFS) and isinstance(sha, str):
            heads[name.removeprefix(BRANCH_REFS)] = sha
    return heads
