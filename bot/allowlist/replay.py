"""The bump flow's prunes put back on a rebuilt bump commit (``bot.pins.facts.PruneReplay``).

Whoever runs a sync (the bump handler, the comment commands) hands this to it: the pins
feature never imports the allowlist's reads and writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.allowlist.commit import AllowlistFile
from bot.context.scope import RepoScope
from bot.github.changes import BranchHead


async def replay_prunes(
    ctx: RepoScope,
    head: BranchHead,
    prunes: Mapping[str, Sequence[str]],
    pin: str,
    trailers: str | None,
    read_at: str,
) -> BranchHead | None:
    """The prune commit on ``head`` for the entries still in the file at ``read_at`` (the
    bump's base)."""
    if ctx.config.allowlist is None:
        return None
    file = AllowlistFile(ctx.gh, ctx.blocking, ctx.repo, ctx.config.allowlist)
    return await file.prune_commit(head, prunes, pin, read_at=read_at, trailers=trailers)
