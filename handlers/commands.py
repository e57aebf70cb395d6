"""Comment commands (`@bot help`, `retry-flaky`, `bump`, `recreate`, `pause`, `resume`)
and the outcomes of jobs `retry-flaky` retried.

A retried job's ``job.finished`` only records its outcome (from the payload and the
store: no GitHub request) and hands the PR's sticky comment to a follow-up delivery
under the PR's subject, the command's: one writer of that comment at a time, on any
replica.
"""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot.commands import flow as commands_flow
from bot.commands.flow import Comment
from bot.context.followups import RETRY_OUTCOMES_EVENT, pr_delivery
from bot.context.handler_ids import handler_id
from bot.context.scope import repo_scope
from bot.context.services import Services
from bot.core.payload import field, optional
from bot.core.sources import JOB_FINISHED
from bot.retry import outcomes as retry_outcomes
from bot.retry.sticky import write_sticky

log = logging.getLogger(__name__)
router = routing.Router()


@router.register("issue_comment", action="created")
@handler_id("commands.comment")
async def on_comment(event: sansio.Event, services: Services) -> None:
    comment = Comment.read(event.data)
    repo = services.served(comment.repository)
    login = comment.login
    if repo is None or login is None or login == services.settings.bot_login:
        return  # not a repository we serve, a deleted account's comment, or our own
    scope = await repo_scope(services, repo)
    if scope is None:
        return
    outcome = await commands_flow.answer(scope, comment, login)
    log.info("%s#%d: comment %d: %s", repo.full_name, comment.number, comment.comment_id, outcome)


@router.register(JOB_FINISHED)
@handler_id("retry.job-finished")
async def on_job_finished(event: sansio.Event, services: Services) -> None:
    job_id = field(event.data, "job.id")
    state = optional(event.data, "job.state")
    found = await retry_outcomes.record_outcome(services.store, job_id, state)
    if found is None:
        return  # not a job the bot retried, or not finished in a way that says anything
    repository, pr = found
    # One follow-up per retried job: a rerun or a redelivery submits nothing new.
    delivery_id = f"{RETRY_OUTCOMES_EVENT}/{job_id}"
    await services.followups.submit(
        pr_delivery(delivery_id, RETRY_OUTCOMES_EVENT, repository, pr, services.clock())
    )


@router.register(RETRY_OUTCOMES_EVENT)
@handler_id("retry.outcomes")
async def on_retry_outcomes(event: sansio.Event, services: Services) -> None:
    repo = services.served(field(event.data, "repository.full_name"))
    pr = field(event.data, "pull_request.number", int)
    doc = await retry_outcomes.with_outcomes(services.store, repo, pr) if repo else None
    if repo is None or doc is None:
        return  # no longer served, or no retry-flaky comment on the PR (a landing's retry)
    gh = await services.github.repo_client(repo.full_name)
    await write_sticky(gh, services.store, repo, pr, doc)
