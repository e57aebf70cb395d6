"""A GitHub stand-in on loopback: real git underneath, GitHub's REST shape on top.

Tests and the offline demo point the bot at ``base_url``. Every request is
matched and validated against GitHub's OpenAPI contract, every JSON answer is
checked before it leaves (in strict mode a fictional shape becomes a 500), and
every ref change, pull request and comment emits the webhook GitHub would send.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from aiohttp import web

from sandbox import (
    github_routes_checks,
    github_routes_git,
    github_routes_issues,
    github_routes_pulls,
)
from sandbox.github_auth import AppAuth, AuthError, InstallationToken, parse_authorization
from sandbox.github_check_runs import ACTIONS_SLUG, CheckRunFields, CheckRunOps
from sandbox.github_checks import CheckOps
from sandbox.github_events import EventBuilder, PushedCommit
from sandbox.github_faults import (
    PRIMARY_LIMIT_MESSAGE,
    SECONDARY_LIMIT_MESSAGE,
    SERVER_ERROR_MESSAGE,
    Fault,
    Faults,
)
from sandbox.github_graphql import GraphQLEndpoint
from sandbox.github_http import ApiError, Call, Query, Reply, Route, Router
from sandbox.github_json import JSON, GitHubJson, PullStats, error_body, noreply_email
from sandbox.github_pulls import PullEvent, PullOps
from sandbox.github_state import (
    PERMISSION_LEVELS,
    Comment,
    CommitStatus,
    IdSequence,
    Installation,
    Issue,
    Label,
    PullInfo,
    Repo,
    Review,
    User,
)
from sandbox.github_statuses import STATUS_STATES
from sandbox.github_webhooks import RecordedDelivery, WebhookSender
from sandbox.gitstore import ZERO_SHA, FileContent, GitStore, Identity

if TYPE_CHECKING:
    from sandbox.contract import Contract

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

SANDBOX_BUG = "sandbox bug on {method} {path}: {error!r}"
UNKNOWN_ROUTE = "no such route: {method} {path}"
NOT_IN_CONTRACT = "{method} {path} is served by the sandbox but is not in the contract"
RESPONSE_VIOLATION = "the sandbox built a response that violates GitHub's contract"
PROBLEMS_PARSING_JSON = "Problems parsing JSON"
INVALID_REQUEST = "Invalid request."
REQUIRES_AUTH = "Requires authentication"
NOT_ACCESSIBLE = "Resource not accessible by integration"
_NO_BODY_DECLARED = "declares no body"
_NOT_DECLARED = "is not declared"
# Statuses GitHub answers on any operation (a hidden or missing resource, a bad body),
# documented or not; their bodies are still checked where the operation declares them.
_ANY_OPERATION = frozenset({404, 422})
# Answers GitHub can give on any operation (auth, rate limits, outages) whatever
# the description lists: a mismatch on these is GitHub's documentation gap, not ours.
_UNDOCUMENTED_OK = frozenset({304, 401, 403, 500, 502, 503, 504})


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: Query
    operation_id: str | None
    status: int
    started: float
    finished: float
    conditional: bool
    body: object | None


class GitHubSandbox:
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
        self.repos: dict[str, Repo] = {}
        self.installations: dict[int, Installation] = {}
        self.users: dict[str, User] = {}
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
        self.graphql = GraphQLEndpoint(self)
        self.router = Router()
        github_routes_git.register(self.router, self)
        github_routes_pulls.register(self.router, self)
        github_routes_issues.register(self.router, self)
        github_routes_checks.register(self.router, self)
        self._runner: web.AppRunner | None = None

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def webhook_url(self) -> str | None:
        return self.sender.url

    @webhook_url.setter
    def webhook_url(self, url: str | None) -> None:
        self.sender.url = url

    @property
    def deliveries(self) -> list[RecordedDelivery]:
        return self.sender.deliveries

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        app = web.Application(client_max_size=100 * 1024**2)
        # GraphQL is one endpoint outside the REST contract, with its own error shape.
        app.router.add_post("/graphql", self.graphql.handle)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_port = self._runner.addresses[0][1]
        self.base_url = f"http://{host}:{bound_port}"
        self.html_base = self.base_url + "/web"
        self.json = GitHubJson(self.base_url, self.html_base, self.users)
        self.events = EventBuilder(self.json)
        self.sender.start()

    async def close(self) -> None:
        await self.sender.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

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

    # -- setup API (synchronous: tests call it directly) ------------------------------------

    def create_repo(
        self,
        full_name: str,
        *,
        files: Mapping[str, FileContent] | None = None,
        default_branch: str = "main",
        installation_id: int | None = None,
        message: str = "Initial commit",
        private: bool = False,
        allow_auto_merge: bool = False,
    ) -> str:
        """A repository with one commit; ``installation_id`` None = the App is not installed.

        Any installation token can read a public repository (as on GitHub); only the
        installation's own token can write to it or see it at all when private. ``files``
        as in ``commit``.
        """
        self.store.init(full_name, default_branch)
        self._add_repo(full_name, default_branch, installation_id, private, allow_auto_merge)
        return self.commit(full_name, dict(files or {}), message, branch=default_branch)

    def import_repository(
        self,
        full_name: str,
        source: Path | str,
        *,
        refs: str | Sequence[str] | Mapping[str, str] = ("main",),
        installation_id: int | None = None,
        default_branch: str | None = None,
        private: bool = False,
        allow_auto_merge: bool = False,
    ) -> dict[str, str]:
        """Serve the existing local git repository ``source`` (a work tree or a git directory)
        as ``full_name``, and return the refs created (full name → sha).

        Nothing is copied: the stand-in borrows the source's object directory through
        ``objects/info/alternates``, so importing a large history takes a few git processes.
        Only the chosen ``refs`` exist in the stand-in: names of the source (a branch, tag,
        full ref, or ``origin/x`` which becomes branch ``x``), or a mapping from a name or
        commit of the source to the ref to create (a short name is a branch), e.g.
        ``{"v1.0": "main"}`` to start ``main`` at an old release and replay from there with
        ``set_ref``/``commit``. ``default_branch`` defaults to the first branch imported.

        Afterwards it is served like a created repository; everything written to it (the
        bot's blobs, trees, commits, refs) lands in the stand-in, never in the source. The
        source must stay where it is, and a ``git gc --prune`` there may drop objects the
        stand-in still uses. Any of the source's objects is readable by sha, imported ref or
        not. The import emits no webhook: the repository has always been there. Raises
        ValueError (with the reason) for a path that is not a git repository, a name the
        source does not have, or a ``full_name`` already taken.
        """
        if full_name in self.repos:
            raise ValueError(f"{full_name} already exists in the sandbox")
        wanted: list[tuple[str, str | None]]
        if isinstance(refs, Mapping):
            wanted = list(refs.items())
        else:
            wanted = [(refs, None)] if isinstance(refs, str) else [(name, None) for name in refs]
        plan = self.store.plan_import(Path(source), wanted)
        branches = plan.branches()
        default = default_branch or (branches[0] if branches else None)
        if default is None or default not in branches:
            raise ValueError(
                f"the default branch {default!r} is not among the imported branches {branches}"
            )
        self.store.link(full_name, plan, default)
        self._add_repo(full_name, default, installation_id, private, allow_auto_merge)
        return dict(plan.refs)

    def _add_repo(
        self,
        full_name: str,
        default_branch: str,
        installation_id: int | None,
        private: bool,
        allow_auto_merge: bool,
    ) -> Repo:
        owner_login = full_name.split("/", 1)[0]
        owner = self.user(owner_login, kind="Organization")
        now = self.clock()
        repo = Repo(full_name, self.ids(), owner, default_branch, installation_id, now, now)
        repo.private = private
        repo.allow_auto_merge = allow_auto_merge
        self.repos[full_name] = repo
        if installation_id is not None and installation_id not in self.installations:
            self.installations[installation_id] = Installation(installation_id, owner, now)
        return repo

    def commit(
        self,
        full_name: str,
        files: Mapping[str, FileContent | None],
        message: str,
        *,
        branch: str = "main",
        author: tuple[str, str] = ("Ada Lovelace", "ada@example.com"),
        when: datetime | None = None,
        pushed_by: str | None = None,
    ) -> str:
        """Commit ``files`` on ``branch`` and push it (as the owner unless ``pushed_by``).

        A value is ``str`` (UTF-8), ``bytes``, or a ``GitFile`` with a mode (executable,
        symlink); None deletes the path, a file or a whole directory. All blobs and the
        tree are written by a fixed number of git processes, however many files.
        """
        repo = self.repo(full_name)
        ref = f"refs/heads/{branch}"
        before = self.store.get_ref(full_name, ref)
        parent = before or self.store.get_ref(full_name, f"refs/heads/{repo.default_branch}")
        base_tree = self.store.read_commit(full_name, parent).tree if parent else None
        tree = self.store.write_files(full_name, base_tree, files)
        stamp = int(when.timestamp()) if when else int(self.clock())
        who = Identity(author[0], author[1], stamp)
        sha = self.store.commit_tree(full_name, tree, [parent] if parent else [], message, who, who)
        if not self.store.update_ref(full_name, ref, sha, before or ZERO_SHA):
            raise RuntimeError(f"{ref} moved while committing")
        pusher = self.user(pushed_by or repo.owner.login)
        self._ref_changed_sync(repo, ref, before or ZERO_SHA, sha, pusher)
        return sha

    def set_ref(self, full_name: str, branch: str, sha: str) -> None:
        repo = self.repo(full_name)
        ref = f"refs/heads/{branch}"
        before = self.store.get_ref(full_name, ref) or ZERO_SHA
        if not self.store.update_ref(full_name, ref, sha, None):
            raise RuntimeError(f"cannot point {ref} at {sha}")
        self._ref_changed_sync(repo, ref, before, sha, self.user(repo.owner.login))

    def head(self, full_name: str, branch: str = "main") -> str:
        sha = self.store.get_ref(full_name, f"refs/heads/{branch}")
        if sha is None:
            raise KeyError(f"{full_name} has no branch {branch}")
        return sha

    def read_file(self, full_name: str, ref: str, path: str) -> str | None:
        commit = self.store.resolve_commit(full_name, ref)
        found = self.store.file_at(full_name, commit, path) if commit else None
        if found is None or found[0] != "blob":
            return None
        return self.store.read_blob(full_name, found[1]).decode()

    def set_permission(self, full_name: str, login: str, permission: str) -> None:
        if permission not in PERMISSION_LEVELS:
            raise ValueError(f"unknown permission {permission!r}")
        self.user(login)
        self.repo(full_name).permissions[login] = permission

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

    def require_checks(self, full_name: str, branch: str, contexts: Sequence[str]) -> None:
        """Protect ``branch``: merging into it needs each context's status to be success."""
        self.repo(full_name).required_contexts[branch] = tuple(contexts)

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

    def merge_pull(self, full_name: str, number: int, *, by: str = "maintainer") -> str:
        repo = self.repo(full_name)
        issue = repo.issues[number]
        merger = self.user(by)
        outcome = self.pulls_ops.merge_sync(repo, issue, "squash", None, None, None, merger)
        commits, _ = self.push_details(full_name, outcome.before, outcome.sha)
        pending = self.pulls_ops.after_merge(repo, issue, outcome, merger, commits)
        self.emit_pull_events(repo, pending, self._stats_for(repo, pending))
        return outcome.sha

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

    def add_comment(self, repo: Repo, issue: Issue, user: User, body: str) -> Comment:
        now = self.clock()
        comment = Comment(self.ids(), repo.full_name, issue.number, user, body, now, now)
        self.comment_store[comment.id] = comment
        issue.comment_ids.append(comment.id)
        return comment

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

    async def push_commit(
        self, full_name: str, files: Mapping[str, FileContent | None], message: str, **kw: Any
    ) -> str:
        """Commit like a developer pushing, and wait until its ``push`` webhook is delivered."""
        sha = self.commit(full_name, files, message, **kw)
        await self.flush()
        return sha

    async def deliver(
        self, event: str, payload: Mapping[str, Any], *, delivery_id: str | None = None
    ) -> int:
        return await self.sender.deliver(event, payload, delivery_id=delivery_id)

    def push_payload(self, full_name: str, *, ref: str, before: str, after: str) -> dict[str, Any]:
        repo = self.repo(full_name)
        commits, forced = self.push_details(full_name, before, after)
        return self.events.push(
            repo,
            ref=ref,
            before=before,
            after=after,
            commits=commits,
            forced=forced,
            sender=self.user(repo.owner.login),
        )

    # -- events -----------------------------------------------------------------------------

    def emit(self, event: str, payload: JSON, repo: Repo) -> None:
        """Queue a webhook; GitHub only delivers to Apps installed on the repository."""
        if repo.installation_id is not None:
            self.sender.enqueue(event, payload)

    def push_details(
        self, full_name: str, before: str, after: str
    ) -> tuple[list[PushedCommit], bool]:
        """Commits a push introduced (oldest first, capped) and whether it was forced."""
        if after == ZERO_SHA:
            return [], False
        repo = self.repo(full_name)
        if before == ZERO_SHA:
            default = self.store.get_ref(full_name, f"refs/heads/{repo.default_branch}")
            revs = [after] + ([f"^{default}"] if default and default != after else [])
            forced = False
        else:
            revs = [f"{before}..{after}"]
            forced = not self.store.is_ancestor(full_name, before, after)
        shas = self.store.rev_list(full_name, *revs, limit=20)[::-1]
        pushed = []
        for info in self.store.read_commits(full_name, shas):
            parent = info.parents[0] if info.parents else None
            files = self.store.diff(
                full_name, parent or "4b825dc642cb6eb9a060e54bf8d69288fbee4904", info.sha
            )
            pushed.append(PushedCommit(info, files))
        return pushed, forced

    def _ref_changed_sync(
        self, repo: Repo, ref: str, before: str, after: str, sender: User
    ) -> None:
        commits, forced = self.push_details(repo.full_name, before, after)
        pending = self.publish_ref_change(repo, ref, before, after, commits, forced, sender)
        self.emit_pull_events(repo, pending, self._stats_for(repo, pending))

    async def ref_changed(
        self, repo: Repo, ref: str, before: str, after: str, sender: User
    ) -> None:
        commits, forced = await self.git(self.push_details, repo.full_name, before, after)
        pending = self.publish_ref_change(repo, ref, before, after, commits, forced, sender)
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
        commits: list[PushedCommit],
        forced: bool,
        sender: User,
    ) -> list[PullEvent]:
        """Emit the ``push``; move pulls along; return the pull webhooks still to build."""
        repo.pushed_at = self.clock()
        if ref.startswith(("refs/heads/", "refs/tags/")):
            payload = self.events.push(
                repo,
                ref=ref,
                before=before,
                after=after,
                commits=commits,
                forced=forced,
                sender=sender,
            )
            self.emit("push", payload, repo)
        if ref.startswith("refs/heads/"):
            branch = ref.removeprefix("refs/heads/")
            return self.pulls_ops.branch_moved(repo, branch, before, after, sender)
        return []

    # -- the HTTP pipeline ------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        method = request.method
        raw_path = request.raw_path.partition("?")[0]
        query: Query = {}
        for key in request.query:
            values = request.query.getall(key)
            query[key] = values if len(values) > 1 else values[0]
        conditional = "If-None-Match" in request.headers
        body: object | None = None
        operation_id: str | None = None
        bucket_key: str | None = None
        counted = True
        try:
            text = await request.text()
            if text.strip():
                try:
                    body = json.loads(text)
                except ValueError as exc:
                    raise ApiError(400, PROBLEMS_PARSING_JSON) from exc
            found = self.router.find(method, raw_path)
            match = self.contract.match(method, raw_path) if self.contract else None
            if found is None:
                self.violations.append(UNKNOWN_ROUTE.format(method=method, path=raw_path))
                raise ApiError(404, "Not Found")
            route, params = found
            operation_id = route.operation_id
            if self.contract is not None:
                if match is None or match.operation.operation_id != operation_id:
                    self.violations.append(NOT_IN_CONTRACT.format(method=method, path=raw_path))
                else:
                    problems = self.contract.validate_request(match, query, body)
                    if problems:
                        self.violations.extend(problems)
                        raise ApiError(422, INVALID_REQUEST + "\n\n" + "\n".join(problems))
            if self.faults.latency:
                await asyncio.sleep(self.faults.latency)
            call, bucket_key = self._authenticate(request, route, params, query, body)
            fault = self.faults.take(operation_id, method)
            if fault is not None and fault.kind in ("ghost", "crash"):
                await route.handler(call)  # applied; the answer is lost
                if fault.kind == "crash" and self.faults.on_crash is not None:
                    self.faults.on_crash()
            if fault is not None:
                return self._fault_response(
                    fault, operation_id, bucket_key, request, started, query, conditional, body
                )
            if self.auth.bucket(bucket_key).remaining == 0:
                raise ApiError(403, PRIMARY_LIMIT_MESSAGE)
            reply = await route.handler(call)
            if method == "GET" and reply.status == 200:
                etag = (
                    '"'
                    + hashlib.sha256(json.dumps(reply.body, sort_keys=True).encode()).hexdigest()
                    + '"'
                )
                reply.headers["ETag"] = etag
                if etag in request.headers.get("If-None-Match", ""):
                    reply = Reply(304, None, {"ETag": etag})
                    counted = False
        except ApiError as error:
            reply = Reply(error.status, error_body(error.message, error.status, error.errors))
        except AuthError as error:
            reply = Reply(401, error_body(str(error), 401))
        except Exception as error:  # a stand-in bug: fail the test loudly, keep serving
            log.exception("sandbox failed on %s %s", method, raw_path)
            self.violations.append(SANDBOX_BUG.format(method=method, path=raw_path, error=error))
            reply = Reply(500, error_body(f"sandbox error: {error}", 500))
        reply = self._checked(method, raw_path, reply)
        if bucket_key is not None and counted:
            self.auth.bucket(bucket_key).used += 1
        response = self._respond(reply, bucket_key)
        self.record_request(request, operation_id, reply.status, started, body, query=query)
        return response

    def _authenticate(
        self,
        request: web.Request,
        route: Route,
        params: dict[str, str],
        query: Query,
        body: object | None,
    ) -> tuple[Call, str]:
        credentials = parse_authorization(request.headers.get("Authorization"))
        repo = None
        token: InstallationToken | None = None
        if "owner" in params and "repo" in params:
            repo = self.repos.get(f"{params['owner']}/{params['repo']}")
        if route.auth == "jwt":
            if credentials is None or credentials[0] != "bearer":
                raise ApiError(401, REQUIRES_AUTH)
            self.auth.verify_jwt(credentials[1])
            bucket_key = "app"
        else:
            if credentials is None:
                raise ApiError(401, REQUIRES_AUTH)
            token = self.auth.check_token(credentials[1])
            bucket_key = token.token
            if "repo" in params and (repo is None or repo.installation_id != token.installation_id):
                # GitHub hides private repositories the installation cannot see; public
                # ones are readable by any token but not writable.
                if repo is None or repo.private:
                    raise ApiError(404, "Not Found")
                if request.method not in ("GET", "HEAD"):
                    raise ApiError(403, NOT_ACCESSIBLE)
        call = Call(request, route.operation_id, params, query, body, repo, token)
        return call, bucket_key

    def _fault_response(
        self,
        fault: Fault,
        operation_id: str,
        bucket_key: str,
        request: web.Request,
        started: float,
        query: Query,
        conditional: bool,
        body: object | None,
    ) -> web.StreamResponse:
        headers: dict[str, str] = {}
        if fault.kind in ("error", "ghost", "crash"):
            reply = Reply(fault.status, {"message": SERVER_ERROR_MESSAGE, "documentation_url": ""})
        elif fault.kind == "primary":
            # Only this answer claims the bucket is empty; the real bucket is untouched.
            bucket = self.auth.bucket(bucket_key)
            headers["x-ratelimit-remaining"] = "0"
            headers["x-ratelimit-used"] = str(bucket.limit)
            reply = Reply(403, error_body(PRIMARY_LIMIT_MESSAGE, 403))
        else:
            headers["retry-after"] = str(fault.retry_after)
            reply = Reply(403, error_body(SECONDARY_LIMIT_MESSAGE, 403))
        reply.headers.update(headers)
        response = self._respond(reply, bucket_key)
        self.record_request(request, operation_id, reply.status, started, body, query=query)
        return response

    def _checked(self, method: str, raw_path: str, reply: Reply) -> Reply:
        """Validate the answer against the contract; a violation in strict mode is a 500."""
        if self.contract is None:
            return reply
        match = self.contract.match(method, raw_path)
        if match is None:
            return reply
        problems = self.contract.validate_response(match, reply.status, reply.body)
        if problems and reply.status in _UNDOCUMENTED_OK:
            return reply
        if reply.status in _ANY_OPERATION and all(_NOT_DECLARED in p for p in problems):
            return reply
        if reply.status >= 400 and all(_NO_BODY_DECLARED in p for p in problems):
            # The description omits the body of some errors GitHub does send one for.
            return reply
        if problems:
            self.violations.extend(problems)
            if self.strict:
                return Reply(500, {"message": RESPONSE_VIOLATION, "problems": problems})
        return reply

    def _respond(self, reply: Reply, bucket_key: str | None) -> web.Response:
        headers = {
            "X-GitHub-Request-Id": uuid.uuid4().hex[:16].upper(),
            "X-GitHub-Media-Type": "github.v3; format=json",
        }
        if bucket_key is not None:
            bucket = self.auth.bucket(bucket_key)
            headers.update(
                {
                    "x-ratelimit-limit": str(bucket.limit),
                    "x-ratelimit-remaining": str(bucket.remaining),
                    "x-ratelimit-reset": str(bucket.reset),
                    "x-ratelimit-used": str(bucket.used),
                    "x-ratelimit-resource": "core",
                }
            )
        headers.update(reply.headers)
        if reply.body is None or reply.status in (204, 304):
            return web.Response(status=reply.status, headers=headers)
        return web.Response(
            status=reply.status,
            body=json.dumps(reply.body).encode(),
            content_type="application/json",
            charset="utf-8",
            headers=headers,
        )

    def respond(self, reply: Reply, bucket_key: str | None) -> web.Response:
        return self._respond(reply, bucket_key)

    def record_request(
        self,
        request: web.Request,
        operation_id: str | None,
        status: int,
        started: float,
        body: object | None,
        *,
        query: Query | None = None,
    ) -> None:
        self.requests.append(
            RecordedRequest(
                request.method,
                request.raw_path.partition("?")[0],
                query or {},
                operation_id,
                status,
                started,
                time.monotonic(),
                "If-None-Match" in request.headers,
                body,
            )
        )

    # -- shared by route modules ------------------------------------------------------------

    async def pull_json(self, repo: Repo, issue: Issue) -> JSON:
        stats: PullStats = await self.git(self.pulls_ops.stats_sync, repo, issue)
        return self.json.pull(repo, issue, stats)
