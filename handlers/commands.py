"""Comment commands (`@bot help`, `retry-flaky`, `bump`, `recreate`, `pause`, `resume`)
and the outcomes of jobs `retry-flaky` retried."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from gidgethub import routing, sansio

from bot.commands.grammar import (
    BUMP,
    PAUSE,
    RECREATE,
    RESUME,
    RETRY_FLAKY,
    Command,
    CommandError,
    authorize,
    help_text,
    parse_command,
)
from bot.config.schema import RepoConfig
from bot.github import neutralise
from bot.github.changes import Repo
from bot.github.permissions import permission_level
from bot.pins import bump
from bot.pins.commands import PinCommandContext, run_pin_command
from bot.retry import flow as retry_flow
from bot.retry.flow import RetryContext, RetryRequest
from bot.retry.text import REFUSE_NOT_A_PR, REFUSE_NOT_CONFIGURED, REPLY_ERROR, REPLY_REFUSED
from bot.service.payload import Payload, each, field, optional, user_login
from bot.service.services import Services
from bot.service.sources import JOB_FINISHED

log = logging.getLogger(__name__)
router = routing.Router()

ACK_REACTION = "eyes"


@dataclass(frozen=True)
class Comment:
    """What the commands read of an ``issue_comment`` payload, read and checked up front."""

    repository: str
    login: str | None  # None: the comment's author has deleted their account
    comment_id: int
    body: str
    url: str
    number: int
    on_pull: bool
    author: str | None  # of the issue or PR
    labels: frozenset[str]

    @classmethod
    def read(cls, data: Payload) -> Comment:
        return cls(
            repository=field(data, "repository.full_name"),
            login=user_login(data, "comment.user"),
            comment_id=field(data, "comment.id", int),
            body=field(data, "comment.body"),
            url=optional(data, "comment.html_url") or "",
            number=field(data, "issue.number", int),
            on_pull=optional(data, "issue.pull_request", dict) is not None,
            author=user_login(data, "issue.user"),
            labels=frozenset(each(data, "issue.labels", "name")),
        )


@router.register("issue_comment", action="created")
async def on_comment(event: sansio.Event, services: Services) -> None:
    comment = Comment.read(event.data)
    repo = services.served(comment.repository)
    login = comment.login
    if repo is None or login is None or login == services.settings.bot_login:
        return  # not a repository we serve, a deleted account's comment, or our own
    gh = await services.github.repo_client(repo.full_name)
    config = await bump.load_config(gh, services.store, services.blocking, repo)
    if config is None:
        return
    number, comment_id = comment.number, comment.comment_id
    try:
        command = parse_command(comment.body, config.handle)
    except CommandError as exc:
        reply = REPLY_ERROR.format(login=login, reason=exc)
        await retry_flow.reply_once(gh, services.store, repo, number, comment_id, reply)
        return
    if command is None:
        return
    await gh.post(
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        url_vars=repo.vars(comment_id=str(comment_id)),
        data={"content": ACK_REACTION},
    )
    if command.name in (BUMP, RECREATE, PAUSE, RESUME):
        await _pin_command(comment, login, services, repo, config, command)
        return
    if command.name != RETRY_FLAKY:
        reply = help_text(config.handle, ready_label=config.retry.author_label)
        await retry_flow.reply_once(gh, services.store, repo, number, comment_id, reply)
        return
    reason = None
    if not comment.on_pull:
        reason = REFUSE_NOT_A_PR
    elif services.buildkite is None:
        reason = REFUSE_NOT_CONFIGURED
    if reason is not None:
        reply = REPLY_REFUSED.format(
            login=login, command=neutralise.code(command.line.strip()), reason=reason
        )
        await retry_flow.reply_once(gh, services.store, repo, number, comment_id, reply)
        return
    assert services.buildkite is not None
    ctx = RetryContext(
        gh,
        services.buildkite,
        services.store,
        services.locks,
        config,
        repo,
        services.cache,
        services.clock,
    )
    request = RetryRequest(number, comment_id, comment.url, login, command)
    outcome = await retry_flow.run_retry_flaky(ctx, request)
    log.info("%s#%d: retry-flaky: %s", repo.full_name, number, outcome)


async def _pin_command(
    comment: Comment,
    login: str,
    services: Services,
    repo: Repo,
    config: RepoConfig,
    command: Command,
) -> None:
    gh = await services.github.repo_client(repo.full_name)
    pull = None
    if comment.on_pull:
        pull = await gh.getitem(
            "/repos/{owner}/{repo}/pulls/{number}",
            url_vars=repo.vars(number=str(comment.number)),
        )
    decision = authorize(
        command,
        level=await permission_level(gh, repo, login),
        is_author=comment.author == login,
        labels=comment.labels,
        ready_label=config.retry.author_label,
    )
    if not decision.allowed:
        reply = REPLY_REFUSED.format(
            login=login, command=neutralise.code(command.line.strip()), reason=decision.reason
        )
    else:
        ctx = PinCommandContext(
            gh,
            services.store,
            services.locks,
            services.blocking,
            repo,
            config,
            services.clock,
            services.settings.bot_login,
        )
        reply = f"@{login} " + await run_pin_command(ctx, command, login=login, pull=pull)
    await retry_flow.reply_once(gh, services.store, repo, comment.number, comment.comment_id, reply)


@router.register(JOB_FINISHED)
async def on_job_finished(event: sansio.Event, services: Services) -> None:
    job_id = field(event.data, "job.id")
    state = optional(event.data, "job.state")
    found = await retry_flow.record_outcome(services.store, job_id, state)
    if found is None:
        return  # not a job the bot retried (or its outcome is known already)
    repo, pr = Repo.parse(found[0]), found[1]
    gh = await services.github.repo_client(repo.full_name)
    await retry_flow.refresh_outcomes(gh, services.store, repo, pr)
