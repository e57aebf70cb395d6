"""Who may run a comment command, and why (not).

The rules mirror vLLM's ``/ci`` commands: repository write access (write,
maintain or admin) runs anything; a PR's author may run the selective retry
once a maintainer has marked the PR ``ready``, because that label is the
maintainers' signal that the PR's CI is worth spending GPU hours on.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.github.changes import Repo

LEVELS = ("admin", "maintain", "write", "triage", "read", "none")
WRITE_LEVELS = frozenset({"admin", "maintain", "write"})
NO_ACCESS = "none"

# Wording of each rule, shared by the help text and the refusals so they never disagree.
WHO_ANYONE = "anyone"
WHO_WRITE = "people with write access to this repository"
WHO_WRITE_OR_READY_AUTHOR = (
    "people with write access to this repository, "
    "or the PR's author once the PR has the `{ready_label}` label"
)

ALLOWED_ANYONE = "anyone can run {command}"
ALLOWED_WRITE = "you have {level} access to this repository"
ALLOWED_READY_AUTHOR = "you opened this PR and it has the `{ready_label}` label"
REFUSED = "only {who} can run {command}"
REFUSED_NOT_READY = REFUSED + "; this PR does not have the `{ready_label}` label yet"
NAMED_COMMAND = "`{name}`"
UNNAMED_COMMAND = "this command"


class Permission(StrEnum):
    ANYONE = "anyone"
    WRITE = "write"
    WRITE_OR_READY_AUTHOR = "write-or-ready-author"


# Least to most demanding: a command with a stricter option needs the stricter rule.
STRICTNESS: Mapping[Permission, int] = {
    Permission.ANYONE: 0,
    Permission.WRITE_OR_READY_AUTHOR: 1,
    Permission.WRITE: 2,
}


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # user-facing, for the reply


def who_may(permission: Permission, *, ready_label: str = "ready") -> str:
    """The people ``permission`` lets in, worded for users."""
    if permission is Permission.ANYONE:
        return WHO_ANYONE
    if permission is Permission.WRITE:
        return WHO_WRITE
    return WHO_WRITE_OR_READY_AUTHOR.format(ready_label=ready_label)


def stricter(first: Permission, second: Permission) -> Permission:
    return first if STRICTNESS[first] >= STRICTNESS[second] else second


def has_write(level: str) -> bool:
    return level in WRITE_LEVELS


async def permission_level(gh: GitHubAPI, repo: Repo, login: str) -> str:
    """``login``'s access to ``repo``: one of ``LEVELS``.

    GitHub's ``permission`` field reads ``write`` for maintainers (and ``read``
    for triage), so ``role_name`` is preferred when it names a built-in role;
    a custom role falls back to the ``permission`` it is based on. Someone
    who is not a user (404) has no access.
    """
    try:
        answer = await gh.getitem(
            "/repos/{owner}/{repo}/collaborators/{username}/permission",
            repo.vars(username=login),
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return NO_ACCESS
        raise
    if not isinstance(answer, dict):
        return NO_ACCESS
    for field in ("role_name", "permission"):
        value = answer.get(field)
        if value in LEVELS:
            return str(value)
    # Unknown wording: least privilege rather than a guess.
    return NO_ACCESS


def decide(
    permission: Permission,
    *,
    level: str,
    is_author: bool,
    labels: Collection[str],
    ready_label: str,
    command: str | None = None,
) -> Decision:
    """Whether someone with ``level`` access may run ``command`` under ``permission``.

    ``labels`` are the PR's labels; GitHub treats label names case-insensitively.
    """
    name = NAMED_COMMAND.format(name=command) if command else UNNAMED_COMMAND
    if permission is Permission.ANYONE:
        return Decision(True, ALLOWED_ANYONE.format(command=name))
    if has_write(level):
        return Decision(True, ALLOWED_WRITE.format(level=level))
    who = who_may(permission, ready_label=ready_label)
    if permission is Permission.WRITE or not is_author:
        return Decision(False, REFUSED.format(who=who, command=name))
    if ready_label.casefold() in {label.casefold() for label in labels}:
        return Decision(True, ALLOWED_READY_AUTHOR.format(ready_label=ready_label))
    return Decision(False, REFUSED_NOT_READY.format(who=who, command=name, ready_label=ready_label))
