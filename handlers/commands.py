"""Comment commands (`@bot help`, `retry-flaky`, `bump`, `recreate`, `pause`, `resume`)
and the outcomes of jobs `retry-flaky` retried."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot import bump, retry_flow
from bot.changes import Repo
from bot.commands import (
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
from bot.payload import field
from bot.permissions import permission_level
from bot.pin_commands import PinCommandContext, run_pin_command
from bot.repo_config import RepoConfig
from bot.retry_flow import RetryContext, RetryRequest
from bot.retry_text import REFUSE_NOT_A_PR, REFUSE_NOT_CONFIGURED, REPLY_ERROR, REPLY_REFUSED
from bot.services import Services

log = logging.getLogger(__name__)
router = routing.Router()

ACK_REACTION = "eyes"


@router.register("issue_comment", action="created")
async def on_comment(event: sansio.Event, services: Services) -> None:
    login = field(event.data, "comment.user.login")
    repo = services.served(field(event.data, "repository.full_name"))
    if repo is None or login == services.settings.bot_login:
        return  # not a repository we serve, or our own comment
    gh = await services.github.repo_client(repo.full_name)
    config = await bump.load_config(gh, services.store, services.blocking, repo)
    if config is None:
        return
    comment_id = field(event.data, "comment.id", int)
    number = field(event.data, "issue.number", int)
    try:
        command = parse_command(field(event.data, "comment.body"), config.handle)
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
        await _pin_command(event, services, repo, config, command)
        return
    if command.name != RETRY_FLAKY:
        reply = help_text(config.handle, ready_label=config.retry.author_label)
        await retry_flow.reply_once(gh, services.store, repo, number, comment_id, reply)
        return
    reason = None
    if "pull_request" not in event.data["issue"]:
        reason = REFUSE_NOT_A_PR
    elif services.buildkite is None:
        reason = REFUSE_NOT_CONFIGURED
    if reason is not None:
        reply = REPLY_REFUSED.format(login=login, command=command.line.strip(), reason=reason)
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
    url = str(event.data["comment"].get("html_url") or "")
    request = RetryRequest(number, comment_id, url, login, command)
    outcome = await retry_flow.run_retry_flaky(ctx, request)
    log.info("%s#%d: retry-flaky: %s", repo.full_name, number, outcome)


async def _pin_command(
    event: sansio.Event, services: Services, repo: Repo, config: RepoConfig, command: Command
) -> None:
    gh = await services.github.repo_client(repo.full_name)
    login = field(event.data, "comment.user.login")
    number = field(event.data, "issue.number", int)
    comment_id = field(event.data, "comment.id", int)
    pull = None
    if "pull_request" in event.data["issue"]:
        pull = await gh.getitem(
            "/repos/{owner}/{repo}/pulls/{number}", url_vars=repo.vars(number=str(number))
        )
    labels = {str(label["name"]) for label in event.data["issue"].get("labels") or []}
    decision = authorize(
        command,
        level=await permission_level(gh, repo, login),
        is_author=str(event.data["issue"]["user"]["login"]) == login,
        labels=labels,
        ready_label=config.retry.author_label,
    )
    if not decision.allowed:
        reply = REPLY_REFUSED.format(
            login=login, command=command.line.strip(), reason=decision.reason
        )
    else:
        ctx = PinCommandContext(
            gh, services.store, services.locks, services.blocking, repo, config, services.clock
        )
        reply = f"@{login} " + await run_pin_command(ctx, command, login=login, pull=pull)
    await retry_flow.reply_once(gh, services.store, repo, number, comment_id, reply)


@router.register("job.finished")
async def on_job_finished(event: sansio.Event, services: Services) -> None:
    job = event.data.get("job")
    if not isinstance(job, dict) or "id" not in job:
        return
    found = await retry_flow.record_outcome(services.store, job)
    if found is None:
        return  # not a job the bot retried (or its outcome is known already)
    repo, pr = Repo.parse(found[0]), found[1]
    gh = await services.github.repo_client(repo.full_name)
    await retry_flow.refresh_outcomes(gh, services.store, repo, pr)
