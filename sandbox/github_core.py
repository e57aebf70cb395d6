"""The GitHub stand-in's state, and how a change spreads through it.

``GitHubCore`` holds the records (repositories in git, accounts, issues and pulls,
installations, the request and webhook logs) and the rules every change goes by,
whether it comes over the API or from a test's setup call: a moved ref emits its
``push`` (a new or deleted tag its ``create`` or ``delete`` first) and moves the pulls
that follow the branch, a passing status or check run completes an auto-merge, and
every event becomes the webhook GitHub would send.

The setup calls tests make are ``github_setup_repos``, ``github_setup_activity`` and
``github_setup_tags``; serving HTTP is ``github_server`` (with ``github_pipeline``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from sandbox.git_objects import ZERO_SHA, Identity
from sandbox.git_tags import TAGS
from sandbox.github_auth import AppAuth
from sandbox.github_check_runs import CheckRunOps
from sandbox.github_checks import CheckOps
from sandbox.github_events import EventBuilder
from sandbox.github_faults import Faults
from sandbox.github_http import ApiError
from sandbox.github_json import GitHubJson, PullStats
from sandbox.github_json_base import JSON, noreply_email
from sandbox.github_names import Caseless
from sandbox.github_pipeline import RecordedRequest
from sandbox.github_pulls import PullEvent, PullOps
from sandbox.github_push_commits import RefPush, branch_push
from sandbox.github_state import (
    APP_PERMISSIONS,
    APP_SUBSCRIBED_EVENTS,
    Comment,
    CommitStatus,
    IdSequence,
    Installation,
    Issue,
    Repo,
    User,
)
from sandbox.github_tag_push import tag_push
from sandbox.github_webhooks import RecordedDelivery, WebhookSender
from sandbox.gitstore import GitStore

if TYPE_CHECKING:
    from sandbox.contract import Contract

P = ParamSpec("P")
T = TypeVar("T")


class GitHubCore:
    def __init__(
        self,
        root: Path,
        *,
        app_id: str,
        app_public_key_pem: str,
        webhook_secret: str,
        contract: Contract | None = None,
        strict: bool = True,
        bot_login: str = "followup-bot[bot]",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root
        self.clock = clock
        self.contract = contract
        self.strict = strict
        self.app_id = app_id
        self.app_slug = bot_login.removesuffix("[bot]")
        self.store = GitStore(root)
        self.auth = AppAuth(app_id, app_public_key_pem, clock)
        self.faults = Faults()
        self.ids = IdSequence()
        # GitHub ignores the case of account and repository names (``github_names``).
        self.repos: Caseless[Repo] = Caseless()
        self.installations: dict[int, Installation] = {}
        # What ``GET /app`` reports: tests give the App too few permissions or events.
        self.app_permissions: dict[str, str] = dict(APP_PERMISSIONS)
        self.app_events: list[str] = list(APP_SUBSCRIBED_EVENTS)
        self.users: Caseless[User] = Caseless()
        self.comment_store: dict[int, Comment] = {}
        self.bot_user = self.user(bot_login, kind="Bot")
        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self.sender = WebhookSender(webhook_secret, contract, strict, self.violations)
        self.base_url = ""
        self.html_base = ""
        self.json = GitHubJson("", "", self.users)
        self.events = EventBuilder(self.json)
        self.pulls_ops = PullOps(self)
        self.checks = CheckOps(self)
        self.check_runs = CheckRunOps(self)

    @property
    def webhook_url(self) -> str | None:
        return self.sender.url

    @webhook_url.setter
    def webhook_url(self, url: str | None) -> None:
        self.sender.url = url

    @property
    def deliveries(self) -> list[RecordedDelivery]:
        return self.sender.deliveries

    def serve_at(self, base_url: str) -> None:
        """Render every URL (and ``html_url``, under ``/web``) against ``base_url``."""
        self.base_url = base_url
        self.html_base = base_url + "/web"
        self.json = GitHubJson(self.base_url, self.html_base, self.users)
        self.events = EventBuilder(self.json)

    async def flush(self) -> None:
        await self.sender.flush()

    def reset_log(self) -> None:
        self.requests.clear()
        self.sender.deliveries.clear()
        self.violations.clear()

    # -- records ----------------------------------------------------------------------------

    def user(self, login: str, *, kind: str | None = None) -> User:
        found = self.users.get(login)
        if found is None:
            found = User(login, self.ids(), kind or ("Bot" if login.endswith("[bot]") else "User"))
            self.users[login] = found
        return found

    def bot_identity(self) -> Identity:
        bot = self.bot_user
        return Identity(bot.login, noreply_email(bot), int(self.clock()))

    def repo(self, full_name: str) -> Repo:
        found = self.repos.get(full_name)
        if found is None:
            raise KeyError(f"no repository {full_name} in the sandbox")
        return found

    def issue(self, repo: Repo, number: int) -> Issue:
        found = repo.issues.get(number)
        if found is None:
            raise ApiError(404, "Not Found")
        return found

    async def git(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a GitStore call in a thread: git never blocks the event loop."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    def add_comment(self, repo: Repo, issue: Issue, user: User, body: str) -> Comment:
        now = self.clock()
        comment = Comment(self.ids(), repo.full_name, issue.number, user, body, now, now)
        self.comment_store[comment.id] = comment
        issue.comment_ids.append(comment.id)
        return comment

    # -- events -----------------------------------------------------------------------------

    def emit(self, event: str, payload: JSON, repo: Repo) -> None:
        """Queue a webhook; GitHub only delivers to Apps installed on the repository."""
        if repo.installation_id is not None:
            self.sender.enqueue(event, payload)

    def push_details(self, full_name: str, ref: str, before: str, after: str) -> RefPush:
        """What the ``push`` of ``ref`` (a branch or a tag, in full) from ``before`` to
        ``after`` lists (``github_push_commits``, ``github_tag_push``)."""
        if ref.startswith(TAGS):
            return tag_push(self.store, full_name, ref, before, after)
        default = self.repo(full_name).default_branch
        return branch_push(self.store, full_name, default, ref, before, after)

    def _ref_changed_sync(
        self, repo: Repo, ref: str, before: str, after: str, sender: User
    ) -> None:
        pushed = self.push_details(repo.full_name, ref, before, after)
        pending = self.publish_ref_change(repo, ref, before, after, pushed, sender)
        self.emit_pull_events(repo, pending, self._stats_for(repo, pending))

    async def ref_changed(
        self, repo: Repo, ref: str, before: str, after: str, sender: User
    ) -> None:
        pushed = await self.git(self.push_details, repo.full_name, ref, before, after)
        pending = self.publish_ref_change(repo, ref, before, after, pushed, sender)
        await self.emit_pull_events_async(repo, pending)

    def _stats_for(self, repo: Repo, pending: list[PullEvent]) -> list[PullStats]:
        return [self.pulls_ops.stats_sync(repo, event.issue) for event in pending]

    def emit_pull_events(
        self, repo: Repo, pending: list[PullEvent], stats: list[PullStats]
    ) -> None:
        for event, stat in zip(pending, stats, strict=True):
            pull = self.json.pull(repo, event.issue, stat)
            payload = self.events.pull_request(
                event.action, repo, pull, event.sender, **event.extra
            )
            self.emit("pull_request", payload, repo)

    async def emit_pull_events_async(self, repo: Repo, pending: list[PullEvent]) -> None:
        if pending:
            stats = await self.git(self._stats_for, repo, pending)
            self.emit_pull_events(repo, pending, stats)

    def publish_ref_change(
        self,
        repo: Repo,
        ref: str,
        before: str,
        after: str,
        pushed: RefPush,
        sender: User,
    ) -> list[PullEvent]:
        """Emit the ``push`` (after a tag's ``create`` or ``delete``); move pulls along;
        return the pull webhooks still to build."""
        repo.pushed_at = self.clock()
        if ref.startswith(TAGS) and ZERO_SHA in (before, after):
            event = "create" if before == ZERO_SHA else "delete"
            self.emit(event, self.events.ref_event(event, repo, ref, sender), repo)
        if ref.startswith(("refs/heads/", TAGS)):
            payload = self.events.push(
                repo, ref=ref, before=before, after=after, pushed=pushed, sender=sender
            )
            self.emit("push", payload, repo)
        if ref.startswith("refs/heads/"):
            branch = ref.removeprefix("refs/heads/")
            return self.pulls_ops.branch_moved(repo, branch, before, after, sender)
        return []

    # -- statuses and auto-merge ------------------------------------------------------------

    async def status_reported(self, repo: Repo, status: CommitStatus) -> None:
        """After a status arrived over the API: its webhook, then any auto-merge it allows."""
        commit = await self.git(self.store.read_commit, repo.full_name, status.sha)
        branches = await self.git(self.checks.branches_at_sync, repo, status.sha)
        self.checks.announce(repo, status, commit, branches)
        await self.land_ready(repo, status.sha)

    def land_ready_sync(self, repo: Repo, sha: str) -> None:
        """Merge the auto-merge pulls at ``sha`` whose required checks (statuses or check
        runs) all pass now: called whenever a status arrives or a check run completes."""
        for issue in self.pulls_ops.auto_merge_ready(repo, sha):
            merged = self.checks.merge_one_sync(repo, issue)
            if merged is not None:
                pending = self.checks.finish_merge(repo, issue, *merged)
                self.emit_pull_events(repo, pending, self._stats_for(repo, pending))

    async def land_ready(self, repo: Repo, sha: str) -> None:
        for issue in self.pulls_ops.auto_merge_ready(repo, sha):
            merged = await self.git(self.checks.merge_one_sync, repo, issue)
            if merged is not None:
                pending = self.checks.finish_merge(repo, issue, *merged)
                await self.emit_pull_events_async(repo, pending)

    # -- shared by route modules ------------------------------------------------------------

    async def pull_json(self, repo: Repo, issue: Issue) -> JSON:
        stats: PullStats = await self.git(self.pulls_ops.stats_sync, repo, issue)
        return self.json.pull(repo, issue, stats)
