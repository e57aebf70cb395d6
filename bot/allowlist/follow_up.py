"""What both allowlist follow-ups (on a bump PR, and the stale-entries PR) share.

Two rules keep them safe. The bot only ever *removes* or *narrows* entries
(it never adds one: unexpected unstable libraries get a comment a human can
act on). And evidence from one platform never deletes an entry that matched
nothing there: such entries are not reported stale, so they are never touched.

Here: what one piece of evidence led to (``AllowlistOutcome``), the
repository's allowlist file, which pin owns an entry, and commenting a piece
of evidence on a PR once.
"""

from __future__ import annotations

import enum
import fnmatch

from bot.allowlist import text as allowlist_text
from bot.allowlist.commit import AllowlistFile
from bot.config.models import PinConfig
from bot.context.scope import RepoScope
from bot.github import effects


class AllowlistOutcome(enum.StrEnum):
    """What one piece of audit evidence led to (the log line)."""

    NOT_THE_HEAD = "evidence is not for the bump branch's head"
    NO_BUMP_PR = "no open bump PR"
    NOTHING_TO_PRUNE = "nothing to prune"
    SUGGESTED_ONLY = "human-owned branch: suggested only"
    PRUNED = "pruned"
    OLDER_COMMIT = "evidence is for an older main commit"
    NO_ALLOWLIST_FILE = "no allowlist file"
    HUMAN_OWNED = "human-owned stale-entries PR left alone"
    UNCHANGED = "unchanged"
    NOTHING_STALE = "nothing stale"
    CLOSED = "closed"
    OPENED = "opened"
    UPDATED = "updated"


def allowlist_file(ctx: RepoScope) -> AllowlistFile:
    """The repository's allowlist file, read and edited through the scope's client."""
    return AllowlistFile(ctx.gh, ctx.blocking, ctx.repo, ctx.allowlist)


def owned(pattern: str, pin: PinConfig) -> bool:
    """Whether the allowlist entry ``pattern`` is one of ``pin``'s (its ``owns`` globs)."""
    return any(fnmatch.fnmatchcase(pattern, own) for own in pin.owns)


async def comment_once(ctx: RepoScope, number: int, key: str, body: str) -> None:
    """Comment unless this evidence was already commented on this PR."""
    marker = allowlist_text.MARKER_EVIDENCE.format(job=key)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, number, body, marker)
