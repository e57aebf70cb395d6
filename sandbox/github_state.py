"""In-memory records of what GitHub keeps outside git: issues, pulls, comments, people.

Git objects and refs live in ``GitStore``; everything here is mutated only on the
event loop, so no locks are needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sandbox.github_names import Caseless, same_name

if TYPE_CHECKING:
    from sandbox.github_annotations import Annotation

# What an installation of the App may do (GitHub's app permissions, as the README
# tells operators to grant them): checks "write" for the "CI routing" check run; a
# test that takes it away sees creating a check run refused, as GitHub refuses it.
APP_PERMISSIONS = {
    "contents": "write",
    "pull_requests": "write",
    "issues": "write",
    "checks": "write",
    "statuses": "read",
    "metadata": "read",
}
# The events the stand-in's own App subscribes to (``GET /app``); tests may change them.
APP_SUBSCRIBED_EVENTS = (
    "check_run",
    "create",
    "issue_comment",
    "pull_request",
    "pull_request_review",
    "push",
    "release",
    "status",
)
PERMISSION_LEVELS = ("admin", "maintain", "write", "triage", "read", "none")
WRITE_LEVELS = frozenset({"admin", "maintain", "write"})
# What repos/get-collaborator-permission-level reports as `permission` (the legacy field).
LEGACY_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}


@dataclass(frozen=True)
class User:
    login: str
    id: int
    type: str = "User"  # "User" | "Bot" | "Organization"


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    # "" rather than None: GitHub's description of a PR's labels does not allow null.
    description: str = ""


@dataclass
class Reaction:
    id: int
    user: User
    content: str
    created_at: float


@dataclass
class Comment:
    id: int
    repo: str
    issue_number: int
    user: User
    body: str
    created_at: float
    updated_at: float
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class Review:
    id: int
    user: User
    state: str  # REST spelling: APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED
    body: str
    commit_id: str
    submitted_at: float
    dismissal_message: str | None = None  # what the dismisser wrote, once DISMISSED


@dataclass
class CommitStatus:
    """One commit status (``POST /statuses/{sha}``); a newer one per context supersedes it."""

    id: int
    sha: str
    state: str  # error | failure | pending | success
    context: str
    target_url: str | None
    description: str | None
    creator: User
    created_at: float
    updated_at: float


@dataclass
class App:
    """A GitHub App as check runs name it: the one that created the run."""

    id: int
    slug: str
    name: str
    owner: User
    bot: User  # its "<slug>[bot]" account: the sender of the webhooks its actions cause
    created_at: float
    permissions: dict[str, str]


@dataclass
class CheckRun:
    """One check run (``POST /check-runs``); a newer run of the same name supersedes it."""

    id: int
    head_sha: str
    name: str
    app: App
    suite_id: int  # one check suite per App and commit, as GitHub groups them
    status: str  # queued | in_progress | completed | waiting | requested | pending
    conclusion: str | None  # set exactly when completed
    started_at: float
    completed_at: float | None
    external_id: str  # "" when the App gave none, as GitHub sends it
    details_url: str
    title: str | None
    summary: str | None
    text: str | None
    created_at: float
    updated_at: float
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class AutoMerge:
    """A pull request's auto-merge request (GraphQL ``enablePullRequestAutoMerge``)."""

    enabled_by: User
    merge_method: str  # REST spelling: merge | squash | rebase
    commit_title: str | None  # None: the method's default when it merges
    commit_message: str | None
    enabled_at: float


@dataclass
class PullInfo:
    head_ref: str
    base_ref: str
    head_sha: str  # kept current while open (pushes move it), frozen once closed
    base_sha: str
    maintainer_can_modify: bool = True
    merged: bool = False
    merged_at: float | None = None
    merged_by: User | None = None
    merge_commit_sha: str | None = None
    reviews: list[Review] = field(default_factory=list)
    auto_merge: AutoMerge | None = None


@dataclass
class Release:
    """A release: GitHub's record about a tag, kept by tag name (the tag may move)."""

    id: int
    tag_name: str
    target_commitish: str  # the default branch unless given: unused once the tag exists
    name: str | None
    body: str
    draft: bool
    prerelease: bool
    author: User
    created_at: float
    published_at: float | None  # None while a draft
    updated_at: float


def newest_first(releases: Iterable[Release]) -> list[Release]:
    """Releases as GitHub lists them: by ``created_at``, newest first (the later id first
    when two were created in the same second)."""
    return sorted(releases, key=lambda r: (r.created_at, r.id), reverse=True)


@dataclass(frozen=True)
class IssueEvent:
    """One entry of an issue's timeline the stand-in keeps: a label put on or taken off."""

    id: int
    event: str  # "labeled" | "unlabeled"
    actor: User
    label: Label
    created_at: float


@dataclass
class Issue:
    number: int
    id: int
    title: str
    body: str | None
    user: User
    state: str
    created_at: float
    updated_at: float
    closed_at: float | None = None
    labels: list[Label] = field(default_factory=list)
    comment_ids: list[int] = field(default_factory=list)
    pull: PullInfo | None = None
    events: list[IssueEvent] = field(default_factory=list)  # its timeline, oldest first


@dataclass
class Repo:
    full_name: str
    id: int
    owner: User
    default_branch: str
    installation_id: int | None
    created_at: float
    pushed_at: float
    issues: dict[int, Issue] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    permissions: Caseless[str] = field(default_factory=Caseless)  # by login
    next_number: int = 1
    private: bool = False
    allow_auto_merge: bool = False
    # Branch protection reduced to what the stand-in enforces: required status contexts.
    required_contexts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Commit statuses by commit sha, oldest first.
    statuses: dict[str, list[CommitStatus]] = field(default_factory=dict)
    # Check runs by id, oldest first (ids only grow).
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    # Check suite ids by (App id, head sha).
    check_suites: dict[tuple[int, str], int] = field(default_factory=dict)
    # Releases by id, oldest first (ids only grow).
    releases: dict[int, Release] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.full_name.split("/", 1)[1]

    def permission_of(self, login: str) -> str:
        if same_name(login, self.owner.login):
            return "admin"
        return self.permissions.get(login, "none")

    def open_pulls_with_head(self, branch: str) -> list[Issue]:
        return [
            issue
            for issue in self.issues.values()
            if issue.pull is not None and issue.state == "open" and issue.pull.head_ref == branch
        ]


@dataclass
class Installation:
    id: int
    account: User
    created_at: float
    permissions: dict[str, str] = field(default_factory=lambda: dict(APP_PERMISSIONS))


class IdSequence:
    """GitHub ids are unique across object kinds; one counter keeps that property."""

    def __init__(self, start: int = 1000) -> None:
        self._next = start

    def __call__(self) -> int:
        self._next += 1
        return self._next
