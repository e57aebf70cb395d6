"""Commit statuses as they happen: record, announce (``status`` webhook), auto-merge.

GitHub merges a pull request with auto-merge on as soon as its required checks
pass; the stand-in does that when a new status arrives at the pull's head, as the
user who enabled auto-merge and with the method they chose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.github_http import ApiError
from sandbox.github_pulls import MergeOutcome, PullEvent
from sandbox.github_state import AutoMerge, CommitStatus, Issue, Repo, User
from sandbox.github_statuses import STATUS_STATES

if TYPE_CHECKING:
    from sandbox.git_objects import CommitInfo
    from sandbox.github_core import GitHubCore
    from sandbox.github_push_commits import RefPush

DEFAULT_CONTEXT = "default"
# GitHub lists at most this many branches (those whose head is the commit) in `status`.
STATUS_BRANCHES_CAP = 10


class CheckOps:
    def __init__(self, sandbox: GitHubCore) -> None:
        self.sandbox = sandbox

    def record(
        self,
        repo: Repo,
        sha: str,
        state: str,
        *,
        context: str,
        target_url: str | None,
        description: str | None,
        creator: User,
    ) -> CommitStatus:
        if state not in STATUS_STATES:
            raise ValueError(f"unknown commit status state {state!r}")
        now = self.sandbox.clock()
        status = CommitStatus(
            id=self.sandbox.ids(),
            sha=sha,
            state=state,
            context=context,
            target_url=target_url,
            description=description,
            creator=creator,
            created_at=now,
            updated_at=now,
        )
        repo.statuses.setdefault(sha, []).append(status)
        return status

    def branches_at_sync(self, repo: Repo, sha: str) -> list[tuple[str, str]]:
        refs = self.sandbox.store.list_refs(repo.full_name, "refs/heads/")
        found = [(ref.removeprefix("refs/heads/"), at) for ref, at in refs.items() if at == sha]
        return sorted(found)[:STATUS_BRANCHES_CAP]

    def announce(
        self,
        repo: Repo,
        status: CommitStatus,
        commit: CommitInfo,
        branches: list[tuple[str, str]],
    ) -> None:
        """Queue the ``status`` webhook (``commit`` and ``branches`` read from git before)."""
        json = self.sandbox.json
        payload = self.sandbox.events.status(
            repo,
            json.status(repo, status),
            json.commit(repo, commit),
            branches,
            status.creator,
        )
        self.sandbox.emit("status", payload, repo)

    # -- auto-merge -------------------------------------------------------------------------

    def merge_one_sync(self, repo: Repo, issue: Issue) -> tuple[MergeOutcome, RefPush] | None:
        """Write an auto-merge into git (thread-safe part); None when git refuses it."""
        pull = issue.pull
        assert pull is not None
        assert pull.auto_merge is not None
        request: AutoMerge = pull.auto_merge
        try:
            outcome = self.sandbox.pulls_ops.merge_sync(
                repo,
                issue,
                request.merge_method,
                None,
                request.commit_title,
                request.commit_message,
                request.enabled_by,
            )
        except ApiError:
            # A conflict keeps the pull open with auto-merge still on, as on GitHub.
            return None
        pushed = self.sandbox.push_details(repo.full_name, outcome.ref, outcome.before, outcome.sha)
        return outcome, pushed

    def finish_merge(
        self, repo: Repo, issue: Issue, outcome: MergeOutcome, pushed: RefPush
    ) -> list[PullEvent]:
        pull = issue.pull
        assert pull is not None
        assert pull.auto_merge is not None
        merger = pull.auto_merge.enabled_by
        return self.sandbox.pulls_ops.after_merge(repo, issue, outcome, merger, pushed)
