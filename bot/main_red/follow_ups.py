"""The writes of a red-on-main episode besides the revert: the issue (found by its marker
before one is opened), the culprit's PR checked and commented on once, and, when the step
is green again, the issue and the revert PR closed with a word each. A lane's issue for
its missing images is written and closed the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import gidgethub

from bot.context.scope import RepoScope
from bot.github import changes, effects
from bot.github.issues import edit_issue, open_issue_once
from bot.main_red import images_text, text
from bot.main_red.lanes import Lane
from bot.main_red.signals import StepRun
from bot.main_red.state import SignalDoc
from bot.main_red.suspects import Suspects

BROKEN = "broken"


async def write_issue(
    ctx: RepoScope,
    marker: str,
    doc: SignalDoc,
    title: str,
    body: str,
    save: Callable[[SignalDoc], Awaitable[None]],
) -> None:
    """Open the episode's issue once (``marker`` finds one a lost record left behind), or
    bring the open one up to date."""
    labels = ctx.config.main_red.labels if ctx.config.main_red else ()
    if doc.issue is None:
        look_first = bool(doc.extra.get("issue_pending"))
        doc.extra["issue_pending"] = True  # recorded first: a rerun looks before creating
        await save(doc)
        doc.issue = await open_issue_once(
            ctx.gh,
            ctx.repo,
            title=title,
            body=body,
            marker=marker,
            labels=labels,
            bot_login=ctx.bot_login,
            look_first=look_first,
        )
        doc.extra.pop("issue_pending", None)
        await save(doc)
    else:
        await edit_issue(ctx.gh, ctx.repo, doc.issue, title=title, body=body)


async def culprit_pull(ctx: RepoScope, suspects: Suspects, notes: list[str]) -> int | None:
    """The PR that merged the culprit, checked: the number in a subject is only a claim
    (it may name an issue, or another repository's PR)."""
    culprit = suspects.ranking.culprit
    if culprit is None or not suspects.trusted:
        return None
    sha7 = text.short(culprit.commit.sha)
    number = culprit.commit.pull_number
    if number is None:
        notes.append(text.NOTE_NO_PULL.format(commit7=sha7))
        return None
    try:
        pull = await ctx.gh.getitem(
            "/repos/{owner}/{repo}/pulls/{number}", url_vars=ctx.repo.vars(number=str(number))
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) != 404:
            raise
        notes.append(text.NOTE_NOT_A_PULL.format(commit7=sha7, number=number))
        return None
    if pull.get("merge_commit_sha") != culprit.commit.sha:
        notes.append(text.NOTE_NOT_A_PULL.format(commit7=sha7, number=number))
        return None
    return number


async def comment_culprit(
    ctx: RepoScope,
    pipeline: str,
    lane: Lane,
    name: str,
    first: StepRun,
    suspects: Suspects,
    doc: SignalDoc,
    pull: int,
) -> None:
    assert doc.issue is not None
    body = text.COMMENT_CULPRIT.format(
        step=name,
        confidence=suspects.ranking.confidence.value,
        why=suspects.ranking.why,
        first=f"#{first.build_number}",
        issue=doc.issue,
    )
    marker = text.culprit_marker(pipeline, name, lane)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, pull, body, marker)
    doc.comment_posted = True


async def close_episode(
    ctx: RepoScope, pipeline: str, lane: Lane, name: str, run: StepRun, doc: SignalDoc
) -> None:
    """The step passed again in ``run``: say so once on the issue and close it; close the
    revert PR if it is still open (merged, it is how the step went green)."""
    if doc.state == BROKEN and not doc.closed:
        since = doc.since or 0
        if doc.issue is not None:
            body = text.COMMENT_GREEN.format(
                step=name, build=f"#{run.build_number}", commit7=text.short(run.commit)
            )
            marker = text.green_marker(pipeline, name, since, lane)
            await effects.post_once(ctx.gh, ctx.store, ctx.repo, doc.issue, body, marker)
            await edit_issue(ctx.gh, ctx.repo, doc.issue, state="closed")
        if doc.revert_pr is not None:
            await _close_revert(ctx, name, run, doc, since)


async def _close_revert(
    ctx: RepoScope, name: str, run: StepRun, doc: SignalDoc, since: int
) -> None:
    assert doc.revert_pr is not None
    pull = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}",
        url_vars=ctx.repo.vars(number=str(doc.revert_pr)),
    )
    if pull.get("state") != "open":
        return  # merged (that is how it went green) or closed by someone
    body = text.COMMENT_REVERT_DONE.format(step=name, build=f"#{run.build_number}")
    marker = text.MARKER_REVERT_DONE.format(step=name, since=since)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, doc.revert_pr, body, marker)
    await changes.update_pull(ctx.gh, ctx.repo, doc.revert_pr, state="closed")


async def close_images(
    ctx: RepoScope, pipeline: str, lane: Lane, run: StepRun, doc: SignalDoc
) -> None:
    """The lane's steps that could not pull their image passed again in ``run``'s build:
    say so once on the issue and close it."""
    if doc.issue is None:
        return
    since = doc.since or 0
    body = images_text.COMMENT_IMAGES_GREEN.format(
        on_main=text.on_main(lane), build=f"#{run.build_number}", commit7=text.short(run.commit)
    )
    marker = images_text.images_green_marker(pipeline, since, lane)
    await effects.post_once(ctx.gh, ctx.store, ctx.repo, doc.issue, body, marker)
    await edit_issue(ctx.gh, ctx.repo, doc.issue, state="closed")
