"""GitHub REST JSON shapes, built from the stand-in's records.

Pure functions of their inputs; the shapes follow GitHub's OpenAPI schemas, which
the server checks on every response. ``GitHubJson`` is the whole set: issues, pull
requests, labels, comments, reviews, commit statuses and check runs here, on top of
the tag and release shapes (``github_json_tags``), the git-data shapes
(``github_json_git``) and the account, repository and App shapes (``github_json_base``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.github_check_runs import pulls_at, suite_state
from sandbox.github_json_base import JSON, iso, node_id
from sandbox.github_json_tags import TagJson
from sandbox.github_state import (
    AutoMerge,
    CheckRun,
    Comment,
    CommitStatus,
    Issue,
    Label,
    Reaction,
    Repo,
    Review,
    User,
)
from sandbox.github_statuses import combined_state, latest_by_context, merge_state


@dataclass(frozen=True)
class PullStats:
    """What GitHub computes about a pull request in the background."""

    mergeable: bool | None
    commits: int
    additions: int
    deletions: int
    changed_files: int


class GitHubJson(TagJson):
    """Every JSON shape the GitHub stand-in sends, REST answers and webhook parts alike."""

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
                "annotations_count": len(run.annotations),
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
