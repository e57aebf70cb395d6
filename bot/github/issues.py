"""Issues the bot opens (one per marker): found before created, created at most once.

An issue POST answered 502 may have been applied, and a crash between the POST and
recording its number leaves the same doubt; so every bot issue carries a hidden marker
and is looked for among the bot's own issues (open or closed) before a new one is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.github import effects
from bot.github.changes import Repo


async def find_issue(
    gh: GitHubAPI, repo: Repo, marker: str, *, bot_login: str
) -> dict[str, Any] | None:
    """The bot's oldest issue (not PR) whose body carries ``marker``, open or closed."""
    found: dict[str, Any] | None = None
    async for issue in gh.getiter(
        "/repos/{owner}/{repo}/issues{?creator,state,per_page}",
        url_vars=repo.vars(creator=bot_login, state="all", per_page="100"),
    ):
        if (
            "pull_request" not in issue
            and (issue.get("user") or {}).get("login") == bot_login
            and marker in str(issue.get("body") or "")
            and (found is None or int(issue["number"]) < int(found["number"]))
        ):
            found = issue
    return found


async def open_issue_once(
    gh: GitHubAPI,
    repo: Repo,
    *,
    title: str,
    body: str,
    marker: str,
    labels: Sequence[str] = (),
    bot_login: str,
    look_first: bool,
) -> int:
    """The number of the issue with ``marker``: the one found, or a new one.

    ``look_first``: a previous attempt may have created it (its intent was recorded);
    a fresh episode skips the listing. Either way a failed POST looks before failing.
    """

    async def find() -> int | None:
        issue = await find_issue(gh, repo, marker, bot_login=bot_login)
        return int(issue["number"]) if issue is not None else None

    if look_first:
        number = await find()
        if number is not None:
            return number

    async def create() -> int:
        data: dict[str, Any] = {"title": title, "body": body}
        if labels:
            data["labels"] = list(labels)
        created = await gh.post("/repos/{owner}/{repo}/issues", url_vars=repo.vars(), data=data)
        return int(created["number"])

    return await effects.look_after_failure(create, find)


async def edit_issue(gh: GitHubAPI, repo: Repo, number: int, **fields: str) -> None:
    await gh.patch(
        "/repos/{owner}/{repo}/issues/{number}",
        url_vars=repo.vars(number=str(number)),
        data=fields,
    )
