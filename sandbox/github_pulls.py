"""Pull-request behaviour that needs git: mergeability, merging, following the head branch."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache

from sandbox.git_objects import ZERO_SHA, CommitInfo, Identity
from sandbox.github_http import VALIDATION_FAILED, ApiError, not_found
from sandbox.github_json import PullStats
from sandbox.github_json_base import JSON, noreply_email
from sandbox.github_push_commits import RefPush
from sandbox.github_state import WRITE_LEVELS, Issue, Repo, User
from sandbox.github_statuses import required_check_blocker

if TYPE_CHECKING:
    from sandbox.github_core import GitHubCore

NOT_MERGEABLE = "Pull Request is not mergeable"
HEAD_MODIFIED = "Head branch was modified. Review and try the merge again."
BASE_MODIFIED = "Base branch was modified. Review and try the merge again."
MERGED = "Pull Request successfully merged"
REBASE_DIVERGED = "This branch can't be rebased"
MERGE_METHODS = ("merge", "squash", "rebase")
# Only these review states can be dismissed; GitHub names the others in its refusal.
DISMISSABLE = frozenset({"APPROVED", "CHANGES_REQUESTED"})
CANNOT_DISMISS = "Can not dismiss a {state} pull request review"
CANNOT_DISMISS_AS = "{login} has no write access to dismiss reviews"
STATS_REMEMBERED = 1024  # pull-request stats kept per stand-in, by the commits they count


@dataclass(frozen=True)
class PullEvent:
    """A ``pull_request`` webhook still to be built (its stats need git, off the loop)."""

    issue: Issue
    action: str
    sender: User
    extra: dict[str, Any]


@dataclass(frozen=True)
class MergeOutcome:
    sha: str  # the new head of the base branch (GitHub's merge_commit_sha)
    before: str  # the base branch head it replaced
    method: str
    ref: str  # the base branch, in full: what the merge's ``push`` is of


def _merge_message(
    repo: Repo, issue: Issue, commit_title: str | None, commit_message: str | None
) -> str:
    pull = issue.pull
    assert pull is not None
    title = (
        commit_title
        or f"Merge pull request #{issue.number} from {repo.owner.login}/{pull.head_ref}"
    )
    return f"{title}\n\n{commit_message if commit_message is not None else issue.title}\n"


def _squash_message(
    issue: Issue,
    head_commits: list[CommitInfo],
    commit_title: str | None,
    commit_message: str | None,
) -> str:
    """GitHub's default squash message lists the squashed commits' messages."""
    title = commit_title or f"{issue.title} (#{issue.number})"
    details = commit_message
    if details is None:
        details = "\n\n".join(f"* {c.message.strip()}" for c in head_commits)
    return f"{title}\n\n{details}\n" if details else f"{title}\n"


# What a pull request's stats are computed from: the repository, whether mergeability is
# asked (open, not merged), the base commit counted against, and the head commit.
StatsKey = tuple[str, bool, str, str]


class PullOps:
    def __init__(self, sandbox: GitHubCore) -> None:
        self.sandbox = sandbox
        # Every pull request GitHub serves carries its stats (a merge, a walk and a diff);
        # the same pull is served again and again with the same commits, and git objects
        # never change, so stats are kept by the commits they were computed from.
        self._stats: LRUCache[StatsKey, PullStats] = LRUCache(STATS_REMEMBERED)
        self._stats_lock = threading.Lock()

    # -- computed fields --------------------------------------------------------------------

    def stats_sync(self, repo: Repo, issue: Issue) -> PullStats:
        pull = issue.pull
        assert pull is not None
        name = repo.full_name
        base_head = self.sandbox.store.get_ref(name, f"refs/heads/{pull.base_ref}")
        base_head = base_head or pull.base_sha
        # A merged PR's head is in its base; count against the base it was opened on.
        base = pull.base_sha if pull.merged else base_head
        key = (name, issue.state == "open" and not pull.merged, base, pull.head_sha)
        with self._stats_lock:
            stats = self._stats.get(key)
        if stats is None:
            stats = self._computed_stats(key)
            with self._stats_lock:
                self._stats[key] = stats
        return stats

    def _computed_stats(self, key: StatsKey) -> PullStats:
        name, ask_mergeable, base, head = key  # an unmerged pull's base is its base branch's head
        store = self.sandbox.store
        mergeable = store.merge_trees(name, base, head) is not None if ask_mergeable else None
        merge_base = store.merge_base(name, base, head) or base
        commits = store.count(name, f"{base}..{head}")
        files = store.diff(name, merge_base, head)
        return PullStats(
            mergeable=mergeable,
            commits=commits,
            additions=sum(f.additions for f in files),
            deletions=sum(f.deletions for f in files),
            changed_files=len(files),
        )

    # -- merging ----------------------------------------------------------------------------

    def merge_sync(
        self,
        repo: Repo,
        issue: Issue,
        method: str,
        expected_sha: str | None,
        commit_title: str | None,
        commit_message: str | None,
        merger: User,
    ) -> MergeOutcome:
        """Write the merge into git (runs in a thread); state changes come after."""
        pull = issue.pull
        assert pull is not None
        store, name = self.sandbox.store, repo.full_name
        if issue.state != "open" or pull.merged:
            raise ApiError(405, NOT_MERGEABLE)
        if expected_sha is not None and expected_sha != pull.head_sha:
            raise ApiError(409, HEAD_MODIFIED)
        base_ref = f"refs/heads/{pull.base_ref}"
        base_head = store.get_ref(name, base_ref)
        if base_head is None:
            raise ApiError(405, NOT_MERGEABLE)
        tree = store.merge_trees(name, base_head, pull.head_sha)
        if tree is None:
            raise ApiError(405, NOT_MERGEABLE)
        now = int(self.sandbox.clock())
        merger_identity = Identity(merger.login, noreply_email(merger), now)
        # Web-flow commits are committed by GitHub itself.
        committer = Identity("GitHub", "noreply@github.com", now)
        head_commits = store.read_commits(
            name, store.rev_list(name, f"{base_head}..{pull.head_sha}", reverse=True)
        )
        if method == "merge":
            message = _merge_message(repo, issue, commit_title, commit_message)
            sha = store.commit_tree(
                name, tree, [base_head, pull.head_sha], message, merger_identity, committer
            )
        elif method == "squash":
            message = _squash_message(issue, head_commits, commit_title, commit_message)
            author = head_commits[0].author if head_commits else merger_identity
            sha = store.commit_tree(name, tree, [base_head], message, author, committer)
        else:
            sha = self._rebase(name, base_head, pull.head_sha, head_commits, committer)
        if not store.update_ref(name, base_ref, sha, base_head):
            raise ApiError(409, BASE_MODIFIED)
        return MergeOutcome(sha=sha, before=base_head, method=method, ref=base_ref)

    def _rebase(
        self,
        name: str,
        base_head: str,
        head_sha: str,
        head_commits: list[CommitInfo],
        committer: Identity,
    ) -> str:
        """Replay ``head_commits`` on ``base_head``; the new tip."""
        store = self.sandbox.store
        # Replaying commits onto a moved base needs a three-way cherry-pick per
        # commit; the stand-in only rebases when the base has not moved.
        if not store.is_ancestor(name, base_head, head_sha):
            raise ApiError(405, REBASE_DIVERGED)
        sha = base_head
        for commit in head_commits:
            sha = store.commit_tree(
                name, commit.tree, [sha], commit.message, commit.author, committer
            )
        return sha

    def after_merge(
        self,
        repo: Repo,
        issue: Issue,
        outcome: MergeOutcome,
        merger: User,
        pushed: RefPush,
    ) -> list[PullEvent]:
        pull = issue.pull
        assert pull is not None
        now = self.sandbox.clock()
        pull.merged = True
        pull.merged_at = now
        pull.merged_by = merger
        pull.merge_commit_sha = outcome.sha
        pull.base_sha = outcome.before
        issue.state = "closed"
        issue.closed_at = now
        issue.updated_at = now
        # GitHub reports the push to the base first, then the closed pull request.
        pending = self.sandbox.publish_ref_change(
            repo, outcome.ref, outcome.before, outcome.sha, pushed, merger
        )
        return [*pending, PullEvent(issue, "closed", merger, {})]

    def check_protection(self, issue: Issue, repo: Repo) -> None:
        """Refuse (405) a merge that a required status check does not allow yet."""
        pull = issue.pull
        assert pull is not None
        if issue.state == "open" and not pull.merged:
            blocker = required_check_blocker(repo, pull)
            if blocker is not None:
                raise ApiError(405, blocker)

    def auto_merge_ready(self, repo: Repo, sha: str) -> list[Issue]:
        """Open pulls at ``sha`` with auto-merge on whose required checks now all pass."""
        return [
            issue
            for issue in repo.issues.values()
            if issue.pull is not None
            and issue.state == "open"
            and issue.pull.auto_merge is not None
            and issue.pull.head_sha == sha
            and required_check_blocker(repo, issue.pull) is None
        ]

    # -- reviews ----------------------------------------------------------------------------

    def dismiss_review(
        self, repo: Repo, issue: Issue, review_id: int, message: str, dismisser: User
    ) -> JSON:
        """Dismiss an approval or a change request; emits ``pull_request_review`` dismissed."""
        pull = issue.pull
        assert pull is not None
        review = next((r for r in pull.reviews if r.id == review_id), None)
        if review is None:
            raise not_found()
        if not self.can_write(repo, dismisser):
            raise ApiError(403, CANNOT_DISMISS_AS.format(login=dismisser.login))
        if review.state not in DISMISSABLE:
            state = review.state.lower()
            raise ApiError(422, VALIDATION_FAILED, [CANNOT_DISMISS.format(state=state)])
        review.state = "DISMISSED"
        review.dismissal_message = message
        sandbox = self.sandbox
        review_json = sandbox.json.review(repo, issue.number, review)
        payload = sandbox.events.pull_request_review(
            repo, sandbox.json.pull(repo, issue), review_json, dismisser, action="dismissed"
        )
        sandbox.emit("pull_request_review", payload, repo)
        return review_json

    def can_write(self, repo: Repo, user: User) -> bool:
        # The App's installation token has contents: write on its repositories.
        if user == self.sandbox.bot_user:
            return repo.installation_id is not None
        return repo.permission_of(user.login) in WRITE_LEVELS

    # -- following branches -----------------------------------------------------------------

    def branch_moved(
        self, repo: Repo, branch: str, before: str, after: str, sender: User
    ) -> list[PullEvent]:
        """Move open pulls along with their branches; the webhooks to send for that."""
        now = self.sandbox.clock()
        pending: list[PullEvent] = []
        for issue in repo.issues.values():
            pull = issue.pull
            if pull is None or issue.state != "open":
                continue
            if pull.base_ref == branch and after != ZERO_SHA:
                pull.base_sha = after
            if pull.head_ref != branch:
                continue
            issue.updated_at = now
            if after == ZERO_SHA:
                # Deleting the head branch closes the pull request, as on GitHub.
                issue.state = "closed"
                issue.closed_at = now
                pending.append(PullEvent(issue, "closed", sender, {}))
            else:
                pull.head_sha = after
                if pull.auto_merge is not None and not self.can_write(repo, sender):
                    # GitHub disables auto-merge when someone without write access
                    # pushes to the head branch; a writer's push keeps it on.
                    pull.auto_merge = None
                pending.append(
                    PullEvent(issue, "synchronize", sender, {"before": before, "after": after})
                )
        return pending
