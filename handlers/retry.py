"""Comment commands on PRs (`@bot retry-flaky`, `@bot help`) and retried jobs' outcomes."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot import bump, retry_flow
from bot.changes import Repo
from bot.commands import CommandError, help_text, parse_command
from bot.payload import field
from bot.retry_flow import RetryContext, RetryRequest
from bot.retry_text import REFUSE_NOT_A_PR, REFUSE_NOT_CONFIGURED, REPLY_ERROR, REPLY_REFUSED
from bot.services import Services

log = logging.getLogger(__name__)
router = routing.Router()

ACK_REACTION = "eyes"


@router.register("issue_comment", action="created")
async def on_comment(event: sansio.Event, services: Services) -> None:
    login = field(event.data, "comment.user.login")
    known = {repo.lower(): repo for repo in services.settings.repositories}
    name = known.get(field(event.data, "repository.full_name").lower())
    if name is None or login == services.settings.bot_login:
        return  # not a repository we serve, or our own comment
    repo = Repo.parse(name)
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
    if command.name != "retry-flaky":
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
    log.info(
        "%s#%d: retry-flaky: %s",
        repo.full_name,
        number,
        await retry_flow.run_retry_flaky(ctx, request),
    )


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
