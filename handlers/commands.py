"""Comment commands (`@bot help`, `retry-flaky`, `bump`, `recreate`, `pause`, `resume`)
and the outcomes of jobs `retry-flaky` retried."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot.commands import flow as commands_flow
from bot.commands.flow import Comment
from bot.github.changes import Repo
from bot.retry import outcomes as retry_outcomes
from bot.service.dispatch import handler_id
from bot.service.payload import field, optional
from bot.service.scope import repo_scope
from bot.service.services import Services
from bot.service.sources import JOB_FINISHED

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
        return  # not a job the bot retried (or its outcome is known already)
    repo, pr = Repo.parse(found[0]), found[1]
    gh = await services.github.repo_client(repo.full_name)
    await retry_outcomes.refresh_outcomes(gh, services.store, repo, pr)
