"""What people and CI do on the GitHub stand-in, as tests and the demo script it.

Synchronous calls that stand for someone other than the bot: a person opens,
closes or merges a pull request, reviews or dismisses a review, comments; CI
reports a commit status or a check run. Each emits the webhooks GitHub would send
(and may complete an auto-merge); GitHub's refusals raise ValueError.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sandbox.github_check_runs import ACTIONS_SLUG, CheckRunFields
from sandbox.github_core import GitHubCore
from sandbox.github_http import ApiError
from sandbox.github_pulls import PullEvent
from sandbox.github_routes_timeline import LABELED, record
from sandbox.github_state import Issue, Label, PullInfo, Review
from sandbox.github_statuses import STATUS_STATES


class ActivitySetup(GitHubCore):
    # -- pull requests ----------------------------------------------------------------------

    def open_pull(
        self,
        full_name: str,
        *,
        head: str,
        title: str,
        by: str,
        base: str | None = None,
        labels: Sequence[str] = (),
    ) -> dict[str, Any]:
        """A person opens a pull request from ``head`` (a branch of this repo), with labels."""
        repo = self.repo(full_name)
        base = base or repo.default_branch
        head_sha = self.store.get_ref(full_name, f"refs/heads/{head}")
        base_sha = self.store.get_ref(full_name, f"refs/heads/{base}")
        if head_sha is None or base_sha is None:
            raise ValueError(f"no branch {head!r} or {base!r} in {full_name}")
        now = self.clock()
        author = self.user(by)
        issue = Issue(
            number=repo.next_number,
            id=self.ids(),
            title=title,
            body=None,
            user=author,
            state="open",
            created_at=now,
            updated_at=now,
            pull=PullInfo(head_ref=head, base_ref=base, head_sha=head_sha, base_sha=base_sha),
        )
        for name in labels:
            label = repo.labels.get(name) or Label(self.ids(), name)
            repo.labels[name] = label
            issue.labels.append(label)
            record(self, issue, LABELED, label, author, now)
        repo.next_number += 1
        repo.issues[issue.number] = issue
        pending = [PullEvent(issue, "opened", author, {})]
        self.emit_pull_events(repo, pending, self._stats_for(repo, pending))
        return self.json.pull(repo, issue)

    def close_pull(self, full_name: str, number: int, *, by: str = "maintainer") -> None:
        """A person closes an open pull request without merging it."""
        repo = self.repo(full_name)
        issue = repo.issues[number]
        if issue.pull is None or issue.state != "open":
            raise ValueError(f"#{number} is not an open pull request")
        now = self.clock()
        issue.state, issue.closed_at, issue.updated_at = "closed", now, now
        pending = [PullEvent(issue, "closed", self.user(by), {})]
        self.emit_pull_events(repo, pending, self._stats_for(repo, pending))

    def merge_pull(self, full_name: str, number: int, *, by: str = "maintainer") -> str:
        repo = self.repo(full_name)
        issue = repo.issues[number]
        merger = self.user(by)
        outcome = self.pulls_ops.merge_sync(repo, issue, "squash", None, None, None, merger)
        pushed = self.push_details(full_name, outcome.ref, outcome.before, outcome.sha)
        pending = self.pulls_ops.after_merge(repo, issue, outcome, merger, pushed)
        self.emit_pull_events(repo, pending, self._stats_for(repo, pending))
        return outcome.sha

    def label_pull(
        self, full_name: str, number: int, name: str, *, by: str, at: float | None = None
    ) -> None:
        """A person puts a label on a pull request (emits ``pull_request`` labeled); ``at``
        (epoch seconds) dates it on the timeline, e.g. long before an approval."""
        repo = self.repo(full_name)
        issue = repo.issues[number]
        if issue.pull is None:
            raise ValueError(f"#{number} is not a pull request")
        if name in {label.name for label in issue.labels}:
            return
        label = repo.labels.get(name) or Label(self.ids(), name)
        repo.labels[name] = label
        issue.labels.append(label)
        who = self.user(by)
        record(self, issue, LABELED, label, who, at)
        issue.updated_at = self.clock()
        pending = [PullEvent(issue, "labeled", who, {"label": self.json.label(repo, label)})]
        self.emit_pull_events(repo, pending, self._stats_for(repo, pending))

    def submit_review(
        self,
        full_name: str,
        number: int,
        login: str,
        state: str = "APPROVED",
        commit_id: str | None = None,
        body: str = "",
    ) -> dict[str, Any]:
        repo = self.repo(full_name)
        issue = repo.issues[number]
        if issue.pull is None:
            raise ValueError(f"#{number} is not a pull request")
        reviewer = self.user(login)
        review = Review(
            self.ids(), reviewer, state, body, commit_id or issue.pull.head_sha, self.clock()
        )
        issue.pull.reviews.append(review)
        review_json = self.json.review(repo, number, review)
        pull_json = self.json.pull(repo, issue)
        self.emit(
            "pull_request_review",
            self.events.pull_request_review(repo, pull_json, review_json, reviewer),
            repo,
        )
        return review_json

    def dismiss_review(
        self, full_name: str, number: int, review_id: int, message: str, *, by: str | None = None
    ) -> dict[str, Any]:
        """Someone with write access (the owner unless ``by``) dismisses a review: it turns
        DISMISSED and ``pull_request_review`` ``dismissed`` is emitted. Refusals (a
        commented or already dismissed review, no write access) raise ValueError."""
        repo = self.repo(full_name)
        issue = repo.issues[number]
        dismisser = self.user(by or repo.owner.login)
        try:
            return self.pulls_ops.dismiss_review(repo, issue, review_id, message, dismisser)
        except ApiError as error:
            detail = ", ".join(map(str, error.errors or [])) or error.message
            raise ValueError(f"review {review_id}: {detail}") from error

    def comment_as(self, full_name: str, number: int, login: str, body: str) -> dict[str, Any]:
        """A person comments on an issue or pull request (emits ``issue_comment`` created)."""
        repo = self.repo(full_name)
        issue = repo.issues[number]
        comment = self.add_comment(repo, issue, self.user(login), body)
        payload = self.events.issue_comment(
            "created",
            repo,
            self.json.issue(repo, issue),
            self.json.comment(repo, comment),
            comment.user,
        )
        self.emit("issue_comment", payload, repo)
        return self.json.comment(repo, comment)

    def pulls(self, full_name: str, *, state: str = "all") -> list[dict[str, Any]]:
        repo = self.repo(full_name)
        found = [
            issue
            for issue in sorted(repo.issues.values(), key=lambda i: -i.number)
            if issue.pull is not None and state in ("all", issue.state)
        ]
        return [
            self.json.pull(repo, issue, self.pulls_ops.stats_sync(repo, issue)) for issue in found
        ]

    def comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        repo = self.repo(full_name)
        issue = repo.issues[number]
        return [self.json.comment(repo, self.comment_store[cid]) for cid in issue.comment_ids]

    # -- CI ---------------------------------------------------------------------------------

    def set_status(
        self,
        full_name: str,
        sha: str,
        state: str,
        *,
        context: str = "buildkite/ci",
        target_url: str | None = None,
        description: str | None = None,
    ) -> dict[str, Any]:
        """CI reports a commit status (emits ``status``; may complete an auto-merge)."""
        if state not in STATUS_STATES:
            raise ValueError(f"unknown commit status state {state!r}")
        repo = self.repo(full_name)
        commit = self.store.read_commit(full_name, sha)
        status = self.checks.record(
            repo,
            commit.sha,
            state,
            context=context,
            target_url=target_url,
            description=description,
            creator=self.user(repo.owner.login),
        )
        self.checks.announce(repo, status, commit, self.checks.branches_at_sync(repo, commit.sha))
        self.land_ready_sync(repo, commit.sha)
        return self.json.status(repo, status, full=True)

    def report_check_run(
        self,
        full_name: str,
        sha: str,
        name: str,
        *,
        status: str = "queued",
        conclusion: str | None = None,
        app_slug: str = ACTIONS_SLUG,
        details_url: str | None = None,
        external_id: str | None = None,
        title: str | None = None,
        summary: str | None = None,
    ) -> dict[str, Any]:
        """An App (GitHub Actions unless ``app_slug``) creates a check run on ``sha``.

        A ``conclusion`` completes it. Emits ``check_run`` ``created`` (and ``completed``
        when born completed); a completed run may complete an auto-merge. GitHub's
        refusals (no conclusion for ``completed``, ...) raise ValueError.
        """
        repo = self.repo(full_name)
        commit = self.store.read_commit(full_name, sha)
        fields = CheckRunFields(
            name=name,
            status=status,
            conclusion=conclusion,
            details_url=details_url,
            external_id=external_id,
            title=title,
            summary=summary,
        )
        return self.check_runs.report_sync(repo, app_slug, commit.sha, fields)

    def update_check_run(
        self,
        full_name: str,
        check_run_id: int,
        *,
        status: str | None = None,
        conclusion: str | None = None,
        name: str | None = None,
        details_url: str | None = None,
        title: str | None = None,
        summary: str | None = None,
    ) -> dict[str, Any]:
        """The run's App changes it (a ``conclusion`` completes it: emits ``check_run``
        ``completed`` and may complete an auto-merge). Refusals raise ValueError."""
        fields = CheckRunFields(
            name=name,
            status=status,
            conclusion=conclusion,
            details_url=details_url,
            title=title,
            summary=summary,
        )
        return self.check_runs.update_sync(self.repo(full_name), check_run_id, fields)
