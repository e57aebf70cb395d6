"""Webhook payloads built from GitHub's own example deliveries.

Each payload starts as a copy of a cut example (so every field GitHub sends is
there, with the type GitHub uses) and gets the stand-in's real values laid over
it: only keys the example has, and only where the types agree, so a REST-shaped
value never sneaks a REST-only field or type into a webhook.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sandbox.contract import load_webhook_example
from sandbox.git_objects import ZERO_SHA
from sandbox.github_json import GitHubJson
from sandbox.github_json_base import JSON, iso
from sandbox.github_push_commits import PushedCommit, RefPush
from sandbox.github_state import Repo, User


def overlay(template: Any, actual: Any) -> Any:
    """``template`` with the values of ``actual`` wherever both have the key and type."""
    if isinstance(template, dict) and isinstance(actual, dict):
        merged = dict(template)
        for key, value in template.items():
            if key in actual:
                merged[key] = overlay(value, actual[key])
        return merged
    if isinstance(template, list) and isinstance(actual, list):
        if template and isinstance(template[0], dict):
            return [overlay(template[0], item) for item in actual]
        return list(actual)
    if template is None or actual is None:
        return actual
    if isinstance(template, bool) != isinstance(actual, bool):
        return template
    numbers = (int, float)
    if isinstance(template, numbers) and isinstance(actual, numbers):
        return actual
    return actual if type(template) is type(actual) else template


class EventBuilder:
    def __init__(self, json: GitHubJson) -> None:
        self.json = json

    def _envelope(self, example: JSON, repo: Repo, sender: User) -> JSON:
        example["repository"] = overlay(example["repository"], self.json.repo(repo))
        example["sender"] = overlay(example["sender"], self.json.user(sender))
        if repo.installation_id is not None:
            example["installation"] = {
                "id": repo.installation_id,
                "node_id": f"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{repo.installation_id}",
            }
        return example

    def _push_commit(self, template: JSON, repo: Repo, pushed: PushedCommit) -> JSON:
        commit = pushed.commit
        files = pushed.files
        value = {
            "id": commit.sha,
            "tree_id": commit.tree,
            "distinct": pushed.distinct,
            "message": commit.message,
            "timestamp": iso(commit.author.timestamp),
            "url": f"{self.json.html}/{repo.full_name}/commit/{commit.sha}",
            "author": {"name": commit.author.name, "email": commit.author.email},
            "committer": {"name": commit.committer.name, "email": commit.committer.email},
            "added": [f.filename for f in files if f.status == "added"],
            "removed": [f.filename for f in files if f.status == "removed"],
            "modified": [f.filename for f in files if f.status not in ("added", "removed")],
        }
        built: JSON = overlay(template, value)
        # The example's people have usernames; GitHub adds one only for a linked account.
        for role, who in (("author", commit.author), ("committer", commit.committer)):
            person: JSON = {"name": who.name, "email": who.email}
            account = self.json.account(who.email)
            if account is not None:
                person["username"] = account.login
            built[role] = person
        return built

    def push(
        self,
        repo: Repo,
        *,
        ref: str,
        before: str,
        after: str,
        pushed: RefPush,
        sender: User,
    ) -> JSON:
        """``pushed``: what ``github_push_commits`` (or ``github_tag_push``) found: the
        listed commits are already cut to GitHub's cap, the head is given even when not
        listed (a tag's: ``after`` may be the tag object)."""
        example = load_webhook_example("push.branch")
        template = example["head_commit"] or (example["commits"] or [None])[0]
        listed = [self._push_commit(template, repo, c) for c in pushed.commits]
        head = None if pushed.head is None else self._push_commit(template, repo, pushed.head)
        short = ref.removeprefix("refs/heads/").removeprefix("refs/tags/")
        # A new ref compares by name; a moved or deleted one from its old sha (GitHub's
        # tag deletion: ".../compare/6113728f27ae...000000000000").
        compare = (
            f"{self.json.html}/{repo.full_name}/compare/{before[:12]}...{after[:12]}"
            if before != ZERO_SHA
            else f"{self.json.html}/{repo.full_name}/compare/{short}"
        )
        example.update(
            {
                "ref": ref,
                "before": before,
                "after": after,
                "created": before == ZERO_SHA,
                "deleted": after == ZERO_SHA,
                "forced": pushed.forced,
                "base_ref": None,
                "compare": compare,
                "commits": listed,
                "head_commit": head,
                "pusher": {"name": sender.login, "email": None},
            }
        )
        return self._envelope(example, repo, sender)

    def ref_event(self, event: str, repo: Repo, ref: str, sender: User) -> JSON:
        """``create`` or ``delete`` of a branch or tag (``ref`` in full): its short name and
        type; ``create`` also names the default branch and the repository's description."""
        example = load_webhook_example(f"{event}.tag")
        is_tag = ref.startswith("refs/tags/")
        example["ref"] = ref.removeprefix("refs/tags/" if is_tag else "refs/heads/")
        example["ref_type"] = "tag" if is_tag else "branch"
        # Pushes and API calls alike: GitHub says "deploy_key" only for a deploy key's push.
        example["pusher_type"] = "user"
        if event == "create":
            example["master_branch"] = repo.default_branch
            example["description"] = None  # the stand-in's repositories have none
        return self._envelope(example, repo, sender)

    def release(self, action: str, repo: Repo, release: JSON, sender: User) -> JSON:
        """``created``, ``published``, ``released`` or ``prereleased``: the REST release."""
        example = load_webhook_example(f"release.{action}")
        example["action"] = action
        example["release"] = overlay(example["release"], release)
        return self._envelope(example, repo, sender)

    def pull_request(
        self,
        action: str,
        repo: Repo,
        pull: JSON,
        sender: User,
        **extra: Any,
    ) -> JSON:
        name = "pull_request.merged" if action == "closed" and pull.get("merged") else None
        example = self._example(name or f"pull_request.{action}", "pull_request.opened")
        example["action"] = action
        example["number"] = pull["number"]
        example["pull_request"] = overlay(example["pull_request"], pull)
        for key in ("label", "changes", "before", "after"):
            example.pop(key, None)
        example.update(extra)
        return self._envelope(example, repo, sender)

    def issue_comment(
        self,
        action: str,
        repo: Repo,
        issue: JSON,
        comment: JSON,
        sender: User,
        **extra: Any,
    ) -> JSON:
        on_pull = "pull_request" in issue
        name = "issue_comment.created_on_pull_request" if on_pull else f"issue_comment.{action}"
        example = self._example(name, "issue_comment.created")
        example["action"] = action
        example.pop("changes", None)
        template_issue = example["issue"]
        built_issue = overlay(template_issue, issue)
        if on_pull:
            built_issue["pull_request"] = dict(issue["pull_request"])
        else:
            built_issue.pop("pull_request", None)
        example["issue"] = built_issue
        example["comment"] = overlay(example["comment"], comment)
        example.update(extra)
        return self._envelope(example, repo, sender)

    def pull_request_review(
        self, repo: Repo, pull: JSON, review: JSON, sender: User, action: str = "submitted"
    ) -> JSON:
        """``submitted`` (by the reviewer) or ``dismissed`` (by whoever dismissed it)."""
        if action == "dismissed":
            name = "pull_request_review.dismissed"
        elif review["state"] == "APPROVED":
            name = "pull_request_review.approved"
        else:
            name = "pull_request_review.submitted"
        example = self._example(name, "pull_request_review.submitted")
        example["action"] = action
        # The recording's organization is not the stand-in's (no other delivery names one).
        example.pop("organization", None)
        example["pull_request"] = overlay(example["pull_request"], pull)
        webhook_review = dict(review, state=str(review["state"]).lower())
        example["review"] = overlay(example["review"], webhook_review)
        return self._envelope(example, repo, sender)

    def check_run(self, action: str, repo: Repo, run: JSON, suite: JSON, sender: User) -> JSON:
        """``created`` or ``completed``: the REST run, with its suite as webhooks embed it."""
        example = load_webhook_example(f"check_run.{action}")
        example["action"] = action
        template = example["check_run"]
        built: JSON = overlay(template, run)
        built.pop("deployment", None)
        built["app"] = self._app(template["app"], run["app"])
        built["check_suite"] = overlay(template["check_suite"], suite)
        built["check_suite"]["app"] = self._app(template["check_suite"]["app"], suite["app"])
        example["check_run"] = built
        return self._envelope(example, repo, sender)

    @staticmethod
    def _app(template: JSON, app: JSON) -> JSON:
        built: JSON = overlay(template, app)
        # The 2019 recording predates the App's slug; today's schema lists it.
        built["slug"] = app["slug"]
        return built

    def status(
        self,
        repo: Repo,
        status: JSON,
        commit: JSON,
        branches: Sequence[tuple[str, str]],
        sender: User,
    ) -> JSON:
        """The ``status`` delivery: the new status, its commit and the branches at it."""
        example = load_webhook_example("status.success")
        for key in ("id", "state", "context", "description", "target_url"):
            example[key] = status[key]
        example["sha"] = commit["sha"]
        example["name"] = repo.full_name
        example["created_at"] = status["created_at"]
        example["updated_at"] = status["updated_at"]
        example["commit"] = overlay(example["commit"], commit)
        template = example["branches"][0]
        example["branches"] = [
            overlay(
                template,
                {
                    "name": name,
                    "commit": {
                        "sha": sha,
                        "url": f"{self.json.api}/repos/{repo.full_name}/commits/{sha}",
                    },
                    "protected": name in repo.required_contexts,
                },
            )
            for name, sha in branches
        ]
        return self._envelope(example, repo, sender)

    @staticmethod
    def _example(name: str, fallback: str) -> JSON:
        try:
            return load_webhook_example(name)
        except KeyError:
            return load_webhook_example(fallback)
