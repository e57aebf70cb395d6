"""GitHub REST JSON shapes, built from the stand-in's records.

Pure functions of their inputs: every ``url`` points at the stand-in's own base
URL (PyGithub follows them and refuses other hosts), every ``html_url`` at
``html_base``. The shapes follow GitHub's OpenAPI schemas, which the server
checks on every response.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sandbox.github_check_runs import pulls_at, suite_state
from sandbox.github_state import (
    App,
    AutoMerge,
    CheckRun,
    Comment,
    CommitStatus,
    Installation,
    Issue,
    Label,
    Reaction,
    Repo,
    Review,
    User,
)
from sandbox.github_statuses import combined_state, latest_by_context, merge_state
from sandbox.gitstore import CommitInfo, FileDiff, Identity, TreeEntry

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


@dataclass(frozen=True)
class PullStats:
    """What GitHub computes about a pull request in the background."""

    mergeable: bool | None
    commits: int
    additions: int
    deletions: int
    changed_files: int


class GitHubJson:
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

    # -- git data ---------------------------------------------------------------------------

    def git_ref(self, repo: Repo, ref: str, sha: str, object_type: str = "commit") -> JSON:
        api = f"{self.api}/repos/{repo.full_name}/git"
        return {
            "ref": ref,
            "node_id": node_id("Ref", f"{repo.id}:{ref}"),
            "url": f"{api}/{ref}",
            "object": {"type": object_type, "sha": sha, "url": f"{api}/{object_type}s/{sha}"},
        }

    @staticmethod
    def _identity(who: Identity) -> JSON:
        return {"name": who.name, "email": who.email, "date": iso(who.timestamp)}

    @staticmethod
    def _verification() -> JSON:
        return {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        }

    def git_commit(self, repo: Repo, commit: CommitInfo) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        return {
            "sha": commit.sha,
            "node_id": node_id("Commit", commit.sha),
            "url": f"{api}/git/commits/{commit.sha}",
            "html_url": f"{self.html}/{repo.full_name}/commit/{commit.sha}",
            "author": self._identity(commit.author),
            "committer": self._identity(commit.committer),
            "tree": {"sha": commit.tree, "url": f"{api}/git/trees/{commit.tree}"},
            "message": commit.message,
            "parents": [
                {
                    "sha": parent,
                    "url": f"{api}/git/commits/{parent}",
                    "html_url": f"{self.html}/{repo.full_name}/commit/{parent}",
                }
                for parent in commit.parents
            ],
            "verification": self._verification(),
        }

    def commit(self, repo: Repo, commit: CommitInfo, files: list[FileDiff] | None = None) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        body: JSON = {
            "url": f"{api}/commits/{commit.sha}",
            "sha": commit.sha,
            "node_id": node_id("Commit", commit.sha),
            "html_url": f"{self.html}/{repo.full_name}/commit/{commit.sha}",
            "comments_url": f"{api}/commits/{commit.sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{commit.sha}",
                "author": self._identity(commit.author),
                "committer": self._identity(commit.committer),
                "message": commit.message,
                "comment_count": 0,
                "tree": {"sha": commit.tree, "url": f"{api}/git/trees/{commit.tree}"},
                "verification": self._verification(),
            },
            # GitHub links an account only when the e-mail belongs to one, else null.
            "author": self._linked_user(commit.author),
            "committer": self._linked_user(commit.committer),
            "parents": [
                {
                    "sha": parent,
                    "url": f"{api}/commits/{parent}",
                    "html_url": f"{self.html}/{repo.full_name}/commit/{parent}",
                }
                for parent in commit.parents
            ],
        }
        if files is not None:
            body["files"] = [self.diff_entry(repo, commit.sha, f) for f in files]
            additions = sum(f.additions for f in files)
            deletions = sum(f.deletions for f in files)
            body["stats"] = {
                "additions": additions,
                "deletions": deletions,
                "total": additions + deletions,
            }
        return body

    def diff_entry(self, repo: Repo, ref: str, diff: FileDiff) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        entry: JSON = {
            "sha": diff.blob_sha,
            "filename": diff.filename,
            "status": diff.status,
            "additions": diff.additions,
            "deletions": diff.deletions,
            "changes": diff.additions + diff.deletions,
            "blob_url": f"{self.html}/{repo.full_name}/blob/{ref}/{diff.filename}",
            "raw_url": f"{self.html}/{repo.full_name}/raw/{ref}/{diff.filename}",
            "contents_url": f"{api}/contents/{diff.filename}?ref={ref}",
        }
        if diff.previous_filename is not None:
            entry["previous_filename"] = diff.previous_filename
        return entry

    def tree(self, repo: Repo, sha: str, entries: list[TreeEntry]) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}/git"
        items: list[JSON] = []
        for entry in entries:
            item: JSON = {
                "path": entry.path,
                "mode": entry.mode,
                "type": entry.type,
                "sha": entry.sha,
            }
            if entry.type == "blob":
                item["size"] = entry.size
                item["url"] = f"{api}/blobs/{entry.sha}"
            elif entry.type == "tree":
                item["url"] = f"{api}/trees/{entry.sha}"
            items.append(item)
        return {"sha": sha, "url": f"{api}/trees/{sha}", "tree": items, "truncated": False}

    def short_blob(self, repo: Repo, sha: str) -> JSON:
        return {"url": f"{self.api}/repos/{repo.full_name}/git/blobs/{sha}", "sha": sha}

    def blob(self, repo: Repo, sha: str, data: bytes) -> JSON:
        return {
            "sha": sha,
            "node_id": node_id("Blob", sha),
            "url": f"{self.api}/repos/{repo.full_name}/git/blobs/{sha}",
            "size": len(data),
            "content": base64.encodebytes(data).decode(),
            "encoding": "base64",
        }

    def content_file(self, repo: Repo, ref: str, path: str, sha: str, data: bytes) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        self_url = f"{api}/contents/{path}?ref={ref}"
        git_url = f"{api}/git/blobs/{sha}"
        html_url = f"{self.html}/{repo.full_name}/blob/{ref}/{path}"
        return {
            "type": "file",
            "encoding": "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": base64.encodebytes(data).decode(),
            "sha": sha,
            "url": self_url,
            "git_url": git_url,
            "html_url": html_url,
            "download_url": f"{self.html}/{repo.full_name}/raw/{ref}/{path}",
            "_links": {"self": self_url, "git": git_url, "html": html_url},
        }

    def branch(self, repo: Repo, name: str, commit: CommitInfo) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}/branches/{name}"
        return {
            "name": name,
            "commit": self.commit(repo, commit),
            "_links": {"self": api, "html": f"{self.html}/{repo.full_name}/tree/{name}"},
            "protected": False,
            "protection": {
                "enabled": False,
                "required_status_checks": {
                    "enforcement_level": "off",
                    "contexts": [],
                    "checks": [],
                },
            },
            "protection_url": f"{api}/protection",
        }

    # -- issues and pulls -------------------------------------------------------------------

    def label(self, repo: Repo, label: Label) -> JSON:
        return {
            "id": label.id,
            "node_id": node_id("Label", label.id),
            "url": f"{self.api}/repos/{repo.full_name}/labels/{label.name}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": False,
        }

    def author_association(self, repo: Repo, user: User) -> str:
        if user.login == repo.owner.login:
            return "OWNER"
        if repo.permission_of(user.login) in ("admin", "maintain", "write"):
            return "COLLABORATOR"
        return "NONE"

    def issue(self, repo: Repo, issue: Issue) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}/issues/{issue.number}"
        kind = "pull" if issue.pull is not None else "issues"
        body: JSON = {
            "id": issue.id,
            "node_id": node_id("Issue", issue.id),
            "url": api,
            "repository_url": f"{self.api}/repos/{repo.full_name}",
            "labels_url": f"{api}/labels{{/name}}",
            "comments_url": f"{api}/comments",
            "events_url": f"{api}/events",
            "html_url": f"{self.html}/{repo.full_name}/{kind}/{issue.number}",
            "number": issue.number,
            "state": issue.state,
            "state_reason": None,
            "title": issue.title,
            "body": issue.body,
            "user": self.user(issue.user),
            "labels": [self.label(repo, label) for label in issue.labels],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": False,
            "comments": len(issue.comment_ids),
            "closed_at": iso(issue.closed_at) if issue.closed_at else None,
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "author_association": self.author_association(repo, issue.user),
        }
        if issue.pull is not None:
            pulls = f"{self.api}/repos/{repo.full_name}/pulls/{issue.number}"
            html = f"{self.html}/{repo.full_name}/pull/{issue.number}"
            body["pull_request"] = {
                "url": pulls,
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": iso(issue.pull.merged_at) if issue.pull.merged_at else None,
            }
        return body

    def _pull_side(self, repo: Repo, ref: str, sha: str) -> JSON:
        return {
            "label": f"{repo.owner.login}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self.user(repo.owner),
            "repo": self.repo(repo),
        }

    def pull(self, repo: Repo, issue: Issue, stats: PullStats | None = None) -> JSON:
        pull = issue.pull
        assert pull is not None, "pull() needs a pull request"
        api = f"{self.api}/repos/{repo.full_name}"
        url = f"{api}/pulls/{issue.number}"
        html = f"{self.html}/{repo.full_name}/pull/{issue.number}"
        issue_url = f"{api}/issues/{issue.number}"
        statuses_url = f"{api}/statuses/{pull.head_sha}"
        body: JSON = {
            "url": url,
            "id": issue.id,
            "node_id": node_id("PullRequest", issue.id),
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": issue_url,
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{issue_url}/comments",
            "statuses_url": statuses_url,
            "number": issue.number,
            "state": issue.state,
            "locked": False,
            "title": issue.title,
            "user": self.user(issue.user),
            "body": issue.body,
            "labels": [self.label(repo, label) for label in issue.labels],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "closed_at": iso(issue.closed_at) if issue.closed_at else None,
            "merged_at": iso(pull.merged_at) if pull.merged_at else None,
            "merge_commit_sha": pull.merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": self._pull_side(repo, pull.head_ref, pull.head_sha),
            "base": self._pull_side(repo, pull.base_ref, pull.base_sha),
            "_links": {
                "self": {"href": url},
                "html": {"href": html},
                "issue": {"href": issue_url},
                "comments": {"href": f"{issue_url}/comments"},
                "review_comments": {"href": f"{url}/comments"},
                "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
                "commits": {"href": f"{url}/commits"},
                "statuses": {"href": statuses_url},
            },
            "author_association": self.author_association(repo, issue.user),
            "auto_merge": self.auto_merge(pull.auto_merge),
            "draft": False,
        }
        if stats is not None:
            if pull.merged or stats.mergeable is None:
                mergeable_state = "unknown"
            else:
                mergeable_state = merge_state(repo, pull, stats.mergeable)
            body.update(
                {
                    "merged": pull.merged,
                    "mergeable": None if pull.merged else stats.mergeable,
                    "rebaseable": None if pull.merged else stats.mergeable,
                    "mergeable_state": mergeable_state,
                    "merged_by": self.user(pull.merged_by) if pull.merged_by else None,
                    "comments": len(issue.comment_ids),
                    "review_comments": 0,
                    "maintainer_can_modify": pull.maintainer_can_modify,
                    "commits": stats.commits,
                    "additions": stats.additions,
                    "deletions": stats.deletions,
                    "changed_files": stats.changed_files,
                }
            )
        return body

    def auto_merge(self, request: AutoMerge | None) -> JSON | None:
        if request is None:
            return None
        return {
            "enabled_by": self.user(request.enabled_by),
            "merge_method": request.merge_method,
            "commit_title": request.commit_title or "",
            "commit_message": request.commit_message or "",
        }

    # -- commit statuses --------------------------------------------------------------------

    def status(self, repo: Repo, status: CommitStatus, *, full: bool = False) -> JSON:
        """A commit status; ``full`` adds its creator (the combined list omits it)."""
        body: JSON = {
            "url": f"{self.api}/repos/{repo.full_name}/statuses/{status.sha}",
            "avatar_url": f"{self.html}/avatars/{status.creator.login}",
            "id": status.id,
            "node_id": node_id("StatusContext", status.id),
            "state": status.state,
            "description": status.description,
            "target_url": status.target_url,
            "context": status.context,
            "created_at": iso(status.created_at),
            "updated_at": iso(status.updated_at),
        }
        if full:
            body["creator"] = self.user(status.creator)
        return body

    def combined_status(self, repo: Repo, sha: str) -> JSON:
        latest = latest_by_context(repo.statuses.get(sha, []))
        api = f"{self.api}/repos/{repo.full_name}"
        return {
            "state": combined_state(latest),
            "statuses": [self.status(repo, status) for status in latest],
            "sha": sha,
            "total_count": len(latest),
            "repository": self.minimal_repo(repo),
            "commit_url": f"{api}/commits/{sha}",
            "url": f"{api}/commits/{sha}/status",
        }

    # -- check runs -------------------------------------------------------------------------

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

    def pull_minimal(self, repo: Repo, issue: Issue) -> JSON:
        pull = issue.pull
        assert pull is not None, "pull_minimal() needs a pull request"
        where = {"id": repo.id, "url": f"{self.api}/repos/{repo.full_name}", "name": repo.name}
        return {
            "id": issue.id,
            "number": issue.number,
            "url": f"{self.api}/repos/{repo.full_name}/pulls/{issue.number}",
            "head": {"ref": pull.head_ref, "sha": pull.head_sha, "repo": dict(where)},
            "base": {"ref": pull.base_ref, "sha": pull.base_sha, "repo": dict(where)},
        }

    def check_run(self, repo: Repo, run: CheckRun) -> JSON:
        url = f"{self.api}/repos/{repo.full_name}/check-runs/{run.id}"
        return {
            "id": run.id,
            "head_sha": run.head_sha,
            "node_id": node_id("CheckRun", run.id),
            "external_id": run.external_id,
            "url": url,
            "html_url": f"{self.html}/{repo.full_name}/runs/{run.id}",
            "details_url": run.details_url,
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": iso(run.started_at),
            "completed_at": iso(run.completed_at) if run.completed_at is not None else None,
            "output": {
                "title": run.title,
                "summary": run.summary,
                "text": run.text,
                "annotations_count": 0,
                "annotations_url": f"{url}/annotations",
            },
            "name": run.name,
            "check_suite": {"id": run.suite_id},
            "app": self.app(run.app),
            # GitHub lists the open pulls whose head is the run's commit.
            "pull_requests": [self.pull_minimal(repo, i) for i in pulls_at(repo, run.head_sha)],
        }

    def check_suite(self, repo: Repo, run: CheckRun, head_branch: str | None) -> JSON:
        """The suite ``run`` belongs to, as a ``check_run`` webhook embeds it."""
        suite_runs = [r for r in repo.check_runs.values() if r.suite_id == run.suite_id]
        status, conclusion = suite_state(suite_runs)
        return {
            "id": run.suite_id,
            "node_id": node_id("CheckSuite", run.suite_id),
            "head_branch": head_branch,
            "head_sha": run.head_sha,
            "status": status,
            "conclusion": conclusion,
            "url": f"{self.api}/repos/{repo.full_name}/check-suites/{run.suite_id}",
            "before": None,
            "after": run.head_sha,
            "pull_requests": [self.pull_minimal(repo, i) for i in pulls_at(repo, run.head_sha)],
            "app": self.app(run.app),
            "created_at": iso(min(r.created_at for r in suite_runs)),
            "updated_at": iso(max(r.updated_at for r in suite_runs)),
        }

    def comment(self, repo: Repo, comment: Comment) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        issue = repo.issues[comment.issue_number]
        kind = "pull" if issue.pull is not None else "issues"
        return {
            "id": comment.id,
            "node_id": node_id("IssueComment", comment.id),
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": (
                f"{self.html}/{repo.full_name}/{kind}/{comment.issue_number}"
                f"#issuecomment-{comment.id}"
            ),
            "issue_url": f"{api}/issues/{comment.issue_number}",
            "body": comment.body,
            "user": self.user(comment.user),
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.updated_at),
            "author_association": self.author_association(repo, comment.user),
        }

    def reaction(self, reaction: Reaction) -> JSON:
        return {
            "id": reaction.id,
            "node_id": node_id("Reaction", reaction.id),
            "user": self.user(reaction.user),
            "content": reaction.content,
            "created_at": iso(reaction.created_at),
        }

    def review(self, repo: Repo, number: int, review: Review) -> JSON:
        html = f"{self.html}/{repo.full_name}/pull/{number}#pullrequestreview-{review.id}"
        pull_url = f"{self.api}/repos/{repo.full_name}/pulls/{number}"
        return {
            "id": review.id,
            "node_id": node_id("PullRequestReview", review.id),
            "user": self.user(review.user),
            "body": review.body,
            "state": review.state,
            "html_url": html,
            "pull_request_url": pull_url,
            "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
            "submitted_at": iso(review.submitted_at),
            "commit_id": review.commit_id,
            "author_association": self.author_association(repo, review.user),
        }

    # -- apps -------------------------------------------------------------------------------

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
