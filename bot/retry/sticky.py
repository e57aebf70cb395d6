"""The PR's one retry comment: what a command shows on it (`show_command`), kept rows
of earlier commands on the same builds, and writing it (`write_sticky`: created once,
found again by its marker after a crash, then edited in place).

Its document (``Kind.RETRY_PR``) holds the rows the comment is rendered from, so the
outcomes of retried jobs (``bot.retry.outcomes``) can re-render it later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.context.scope import RepoScope
from bot.failures.builds import FoundBuild
from bot.github import changes, effects
from bot.github.changes import Repo
from bot.retry import text as retry_text
from bot.retry.request import RetryRequest
from bot.store.kinds import Kind
from bot.store.protocol import Store


async def show_command(
    ctx: RepoScope,
    request: RetryRequest,
    builds: Sequence[FoundBuild],
    *,
    rows: list[dict[str, Any]],
    note: str | None = None,
    merge: bool = False,
) -> None:
    """Write the PR's one retry comment (created once, then edited in place)."""
    key = f"{ctx.repo.full_name}#{request.pr}"
    doc = dict(await ctx.store.get_state(Kind.RETRY_PR, key) or {})
    shown = [
        {"pipeline": f.pipeline, "number": f.number, "url": str(f.build.get("web_url") or "")}
        for f in builds
    ]
    if doc.get("builds") == shown:
        rows = _kept_rows(doc.get("rows") or [], rows, merge=merge)
    doc.update(
        builds=shown,
        requested_by=request.login,
        reason=request.reason,
        command_url=request.comment_url,
        rows=rows,
        note=note,
    )
    await write_sticky(ctx.gh, ctx.store, ctx.repo, request.pr, doc)


def _kept_rows(
    old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], *, merge: bool
) -> list[dict[str, Any]]:
    """The rows of a new command on the same builds. A forced retry adds its row to the
    others; a full command replaces them, but keeps the jobs the bot retried earlier:
    while a retry runs its job is no failure of the build, and its outcome (perhaps
    "failed again") must still be shown where the retry was announced."""
    new_ids = {row["job_id"] for row in new}
    if merge:
        kept = [row for row in old if row["job_id"] not in new_ids]
    else:
        kept = [row for row in old if row.get("new_job_id") and row["job_id"] not in new_ids]
    return [*kept, *new]


async def write_sticky(
    gh: GitHubAPI, store: Store, repo: Repo, pr: int, doc: dict[str, Any]
) -> None:
    body = retry_text.sticky_body(
        builds=doc.get("builds") or [],
        requested_by=doc["requested_by"],
        reason=doc.get("reason"),
        command_url=doc["command_url"],
        rows=doc.get("rows") or [],
        note=doc.get("note"),
    )
    key = f"{repo.full_name}#{pr}"
    if doc.get("body") == body:
        return
    comment_id = doc.get("comment_id")
    if comment_id is None:
        doc["comment_id"] = await _create_sticky(gh, store, repo, pr, key, doc, body)
    else:
        try:
            await changes.edit_comment(gh, repo, int(comment_id), body)
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
            doc["comment_id"] = await changes.comment(gh, repo, pr, body)  # someone deleted it
    doc["body"] = body
    doc.pop("creating", None)
    await store.put_state(Kind.RETRY_PR, key, doc)


async def _create_sticky(
    gh: GitHubAPI, store: Store, repo: Repo, pr: int, key: str, doc: dict[str, Any], body: str
) -> int:
    """The sticky comment, created once: an earlier attempt that may have created it
    (a crash, or an answer lost after GitHub applied it) is looked for by its marker."""
    marker = retry_text.MARKER_STICKY

    async def find() -> int | None:
        return await effects.find_comment(gh, repo, pr, marker)

    if doc.get("creating"):
        found = await find()
        if found is not None:
            # It may carry an older body than this attempt's.
            await changes.edit_comment(gh, repo, found, body)
            return found
    else:
        doc["creating"] = True
        await store.put_state(Kind.RETRY_PR, key, doc)
    return await effects.look_after_failure(lambda: changes.comment(gh, repo, pr, body), find)
