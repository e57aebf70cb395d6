"""The building blocks of the GitHub stand-in's JSON, and the shapes everything embeds.

The ``JSON`` type, GitHub's timestamps, node ids, error bodies and commit e-mails,
and ``BaseJson``: the account, repository, App and installation shapes that the
git-data (``github_json_git``) and REST (``github_json``) shapes nest. Every ``url``
points at the stand-in's own base URL (PyGithub follows them and refuses other
hosts), every ``html_url`` at ``html_base``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sandbox.git_objects import Identity
from sandbox.github_state import App, Installation, Repo, User

JSON = dict[str, Any]
DOCS_URL = "https://docs.github.com/rest"
APP_EVENTS = ["push", "pull_request", "pull_request_review", "issue_comment", "check_run", "status"]
# GitHub's private commit e-mail, "<id>+<login>@" this domain ("<login>@" for accounts
# older than 2017): the only addresses the stand-in's accounts have, so the only ones
# that link a commit to an account.
NOREPLY_DOMAIN = "users.noreply.github.com"


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_id(kind: str, ident: int | str) -> str:
    return base64.b64encode(f"{kind}:{ident}".encode()).decode().rstrip("=")


def noreply_email(user: User) -> str:
    return f"{user.id}+{user.login}@{NOREPLY_DOMAIN}"


def account_for_email(users: Mapping[str, User], email: str) -> User | None:
    """The account ``email`` belongs to, as GitHub links commit authors; None if nobody's."""
    local, at, domain = email.rpartition("@")
    if not at or domain.lower() != NOREPLY_DOMAIN:
        return None
    ident, plus, login = local.partition("+")
    user = users.get(login if plus else local)
    if user is None or (plus and ident != str(user.id)):
        return None
    return user


def error_body(message: str, status: int, errors: list[JSON] | list[str] | None = None) -> JSON:
    body: JSON = {"message": message, "documentation_url": DOCS_URL, "status": str(status)}
    if errors is not None:
        body["errors"] = errors
    return body


class BaseJson:
    def __init__(self, base_url: str, html_base: str, users: Mapping[str, User]) -> None:
        self.api = base_url.rstrip("/")
        self.html = html_base.rstrip("/")
        # The stand-in's live accounts by login: a commit links to one once it exists.
        self.users = users

    # -- people -----------------------------------------------------------------------------

    def user(self, user: User) -> JSON:
        api = f"{self.api}/users/{user.login}"
        return {
            "login": user.login,
            "id": user.id,
            "node_id": node_id("User", user.id),
            "avatar_url": f"{self.html}/avatars/{user.login}",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.html}/{user.login}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": user.type,
            "site_admin": False,
        }

    def account(self, email: str) -> User | None:
        return account_for_email(self.users, email)

    def _linked_user(self, who: Identity) -> JSON | None:
        account = self.account(who.email)
        return None if account is None else self.user(account)

    # -- repositories -----------------------------------------------------------------------

    def repo_urls(self, repo: Repo) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        templated = {
            "archive_url": "/{archive_format}{/ref}",
            "assignees_url": "/assignees{/user}",
            "blobs_url": "/git/blobs{/sha}",
            "branches_url": "/branches{/branch}",
            "collaborators_url": "/collaborators{/collaborator}",
            "comments_url": "/comments{/number}",
            "commits_url": "/commits{/sha}",
            "compare_url": "/compare/{base}...{head}",
            "contents_url": "/contents/{+path}",
            "git_commits_url": "/git/commits{/sha}",
            "git_refs_url": "/git/refs{/sha}",
            "git_tags_url": "/git/tags{/sha}",
            "issue_comment_url": "/issues/comments{/number}",
            "issue_events_url": "/issues/events{/number}",
            "issues_url": "/issues{/number}",
            "keys_url": "/keys{/key_id}",
            "labels_url": "/labels{/name}",
            "milestones_url": "/milestones{/number}",
            "notifications_url": "/notifications{?since,all,participating}",
            "pulls_url": "/pulls{/number}",
            "releases_url": "/releases{/id}",
            "statuses_url": "/statuses/{sha}",
            "trees_url": "/git/trees{/sha}",
            "contributors_url": "/contributors",
            "deployments_url": "/deployments",
            "downloads_url": "/downloads",
            "events_url": "/events",
            "forks_url": "/forks",
            "hooks_url": "/hooks",
            "languages_url": "/languages",
            "merges_url": "/merges",
            "stargazers_url": "/stargazers",
            "subscribers_url": "/subscribers",
            "subscription_url": "/subscription",
            "tags_url": "/tags",
            "teams_url": "/teams",
        }
        return {key: api + suffix for key, suffix in templated.items()}

    def minimal_repo(self, repo: Repo) -> JSON:
        return {
            "id": repo.id,
            "node_id": node_id("Repository", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "owner": self.user(repo.owner),
            "private": repo.private,
            "html_url": f"{self.html}/{repo.full_name}",
            "description": None,
            "fork": False,
            "url": f"{self.api}/repos/{repo.full_name}",
            **self.repo_urls(repo),
        }

    def repo(self, repo: Repo, *, full: bool = False) -> JSON:
        open_count = sum(1 for issue in repo.issues.values() if issue.state == "open")
        body = {
            **self.minimal_repo(repo),
            "git_url": f"git://sandbox/{repo.full_name}.git",
            "ssh_url": f"git@sandbox:{repo.full_name}.git",
            "clone_url": f"{self.html}/{repo.full_name}.git",
            "svn_url": f"{self.html}/{repo.full_name}",
            "mirror_url": None,
            "homepage": None,
            "language": None,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "watchers": 0,
            "size": 0,
            "default_branch": repo.default_branch,
            "open_issues": open_count,
            "open_issues_count": open_count,
            "has_issues": True,
            "has_projects": False,
            "has_wiki": False,
            "has_pages": False,
            "has_downloads": False,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "license": None,
            "visibility": "private" if repo.private else "public",
            "pushed_at": iso(repo.pushed_at),
            "created_at": iso(repo.created_at),
            "updated_at": iso(repo.pushed_at),
        }
        if full:
            body.update(
                {
                    "network_count": 0,
                    "subscribers_count": 0,
                    "allow_squash_merge": True,
                    "allow_merge_commit": True,
                    "allow_rebase_merge": True,
                    "allow_auto_merge": repo.allow_auto_merge,
                    "delete_branch_on_merge": False,
                }
            )
        return body

    # -- apps -------------------------------------------------------------------------------

    def app_homepage(self, app: App) -> str:
        return f"{self.html}/apps/{app.slug}"

    def app(self, app: App) -> JSON:
        home = self.app_homepage(app)
        return {
            "id": app.id,
            "slug": app.slug,
            "node_id": node_id("App", app.id),
            "owner": self.user(app.owner),
            "name": app.name,
            "description": "",
            "external_url": home,
            "html_url": home,
            "created_at": iso(app.created_at),
            "updated_at": iso(app.created_at),
            "permissions": dict(app.permissions),
            "events": [],
        }

    def installation(self, installation: Installation, app_id: int, app_slug: str) -> JSON:
        api = f"{self.api}/app/installations/{installation.id}"
        return {
            "id": installation.id,
            "account": self.user(installation.account),
            "repository_selection": "selected",
            "access_tokens_url": f"{api}/access_tokens",
            "repositories_url": f"{self.api}/installation/repositories",
            "html_url": f"{self.html}/settings/installations/{installation.id}",
            "app_id": app_id,
            "app_slug": app_slug,
            "target_id": installation.account.id,
            "target_type": installation.account.type,
            "permissions": dict(installation.permissions),
            "events": list(APP_EVENTS),
            "created_at": iso(installation.created_at),
            "updated_at": iso(installation.created_at),
            "single_file_name": None,
            "suspended_by": None,
            "suspended_at": None,
        }
