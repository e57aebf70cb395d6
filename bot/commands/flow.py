"""Answering one command comment: parse it, acknowledge it, run it, reply once.

The handler reads the comment and builds the repository's scope; everything the
bot then does about the comment happens here, each reply keyed by the command's
comment id so a redelivery never answers twice.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from bot.allowlist.replay import replay_prunes
from bot.comments.grammar import (
    BUMP,
    PAUSE,
    RECREATE,
    RESUME,
    RETRY_FLAKY,
    WHY_RED,
    Command,
    CommandError,
    authorize,
    help_text,
    parse_command,
)
from bot.comments.replies import reply_once
from bot.context.scope import RepoScope
from bot.core.payload import Payload, each, field, optional, user_login
from bot.github import neutralise
from bot.github.permissions import permission_level
from bot.main_red.why_red import REFUSE_NO_MAIN_RED, why_red
from bot.pins.commands import run_pin_command
from bot.retry import flow as retry_flow
from bot.retry.request import Retried, RetryRequest
from bot.retry.text import REFUSE_NOT_A_PR, REFUSE_NOT_CONFIGURED, REPLY_ERROR, REPLY_REFUSED

ACK_REACTION = "eyes"
PIN_COMMANDS = (BUMP, RECREATE, PAUSE, RESUME)


class CommentOutcome(enum.StrEnum):
    NOT_A_COMMAND = "not a command"
    PARSE_ERROR = "parse error answered"
    HELP = "help answered"
    REFUSED = "refused"
    PIN_COMMAND = "pin command answered"
    WHY_RED = "why-red answered"


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


async def answer(scope: RepoScope, comment: Comment, login: str) -> CommentOutcome | Retried:
    """Whatever the comment asks of the bot, done once; the outcome for the log."""
    try:
        command = parse_command(comment.body, scope.config.handle)
    except CommandError as exc:
        await _reply(scope, comment, REPLY_ERROR.format(login=login, reason=exc))
        return CommentOutcome.PARSE_ERROR
    if command is None:
        return CommentOutcome.NOT_A_COMMAND
    await scope.gh.post(
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        url_vars=scope.repo.vars(comment_id=str(comment.comment_id)),
        data={"content": ACK_REACTION},
    )
    if command.name in PIN_COMMANDS:
        return await _pin_command(scope, comment, login, command)
    if command.name == WHY_RED:
        return await _why_red(scope, comment, login, command)
    if command.name != RETRY_FLAKY:
        reply = help_text(scope.config.handle, ready_label=scope.config.retry.author_label)
        await _reply(scope, comment, reply)
        return CommentOutcome.HELP
    return await _retry_flaky(scope, comment, login, command)


async def _retry_flaky(
    scope: RepoScope, comment: Comment, login: str, command: Command
) -> CommentOutcome | Retried:
    reason = None
    if not comment.on_pull:
        reason = REFUSE_NOT_A_PR
    elif scope.bk is None:
        reason = REFUSE_NOT_CONFIGURED
    if reason is not None:
        await _reply(scope, comment, _refusal(login, command, reason))
        return CommentOutcome.REFUSED
    request = RetryRequest(comment.number, comment.comment_id, comment.url, login, command)
    return await retry_flow.run_retry_flaky(scope, request)


async def _allowed(scope: RepoScope, comment: Comment, login: str, command: Command) -> bool:
    decision = authorize(
        command,
        level=await permission_level(scope.gh, scope.repo, login),
        is_author=comment.author == login,
        labels=comment.labels,
        ready_label=scope.config.retry.author_label,
    )
    if not decision.allowed:
        await _reply(scope, comment, _refusal(login, command, decision.reason))
    return decision.allowed


async def _why_red(
    scope: RepoScope, comment: Comment, login: str, command: Command
) -> CommentOutcome:
    if not await _allowed(scope, comment, login, command):
        return CommentOutcome.REFUSED
    if scope.bk is None or scope.config.buildkite is None:
        await _reply(scope, comment, _refusal(login, command, REFUSE_NO_MAIN_RED))
        return CommentOutcome.REFUSED
    body = await why_red(scope, command.args[0])
    await _reply(scope, comment, f"@{login} {body}")
    return CommentOutcome.WHY_RED


async def _pin_command(
    scope: RepoScope, comment: Comment, login: str, command: Command
) -> CommentOutcome:
    pull: dict[str, Any] | None = None
    if comment.on_pull:
        pull = await scope.gh.getitem(
            "/repos/{owner}/{repo}/pulls/{number}",
            url_vars=scope.repo.vars(number=str(comment.number)),
        )
    if not await _allowed(scope, comment, login, command):
        return CommentOutcome.REFUSED
    done = await run_pin_command(
        scope, command, login=login, pull=pull, replay_prunes=replay_prunes
    )
    await _reply(scope, comment, f"@{login} {done}")
    return CommentOutcome.PIN_COMMAND


def _refusal(login: str, command: Command, reason: str) -> str:
    return REPLY_REFUSED.format(
        login=login, command=neutralise.code(command.line.strip()), reason=reason
    )


async def _reply(scope: RepoScope, comment: Comment, body: str) -> None:
    await reply_once(scope.gh, scope.store, scope.repo, comment.number, comment.comment_id, body)
