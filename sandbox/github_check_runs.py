"""Check runs: what Apps (GitHub Actions among them) report about a commit.

The REST routes and the tests' setup API go through the same rules, the ones
GitHub documents for the Checks API: a conclusion means the run is completed, a
completed run needs a conclusion, only GitHub sets ``stale`` and only GitHub
Actions sets ``waiting``, ``requested`` or ``pending``. A run that completes is
announced (``check_run`` webhook) and may let an auto-merge through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sandbox.github_annotations import Annotation, annotations_from
from sandbox.github_http import ApiError, not_found
from sandbox.github_state import APP_PERMISSIONS, App, CheckRun, Issue, Repo

if TYPE_CHECKING:
    from sandbox.github_core import GitHubCore
    from sandbox.github_json_base import JSON

CHECK_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
QUEUED = "queued"
COMPLETED = "completed"
ACTIONS_ONLY_STATUSES = frozenset({"waiting", "requested", "pending"})
# What an App may conclude ("stale" is GitHub's own, and the REST shape of a run
# cannot even show it).
CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "timed_out",
)
STALE = "stale"
# Conclusions that satisfy a required check, as branch protection counts them.
PASSING_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})
# A suite's conclusion is its runs' most severe one, in this order.
SUITE_PRECEDENCE = (
    "action_required",
    "cancelled",
    "timed_out",
    "failure",
    "success",
    "neutral",
    "skipped",
)
ACTIONS_SLUG = "github-actions"
# Apps known by slug, as github.com has them: (id, name, owner login).
KNOWN_APPS = {ACTIONS_SLUG: (15368, "GitHub Actions", "github")}
# What a CI App needs to report checks (the stand-in's own App uses APP_PERMISSIONS).
CI_APP_PERMISSIONS = {"checks": "write", "contents": "read", "metadata": "read"}

CHECKS_READ_ONLY = "Resource not accessible by integration"
CONCLUSION_MISSING = 'Invalid request.\n\n"conclusion" wasn\'t supplied.'
NAME_MISSING = 'Invalid request.\n\n"name" wasn\'t supplied.'
STALE_REFUSED = 'Invalid request.\n\nOnly GitHub can set the conclusion "stale".'
ACTIONS_ONLY = 'Invalid request.\n\nOnly GitHub Actions can set a status of "{status}".'
UNKNOWN_STATUS = "Invalid request.\n\n{status!r} is not a check run status."
UNKNOWN_CONCLUSION = "Invalid request.\n\n{conclusion!r} is not a check run conclusion."
OTHER_APPS_RUN = (
    "Invalid app_id `{app_id}` - check run can only be modified by the GitHub App that created it."
)


def parse_time(value: object) -> float | None:
    """An ISO 8601 timestamp from a request body as epoch seconds (None when absent)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise ApiError(422, f"Invalid request.\n\n{value!r} is not a date-time.") from exc


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class CheckRunFields:
    """What a create or an update asks for; None means "not given"."""

    name: str | None = None
    status: str | None = None
    conclusion: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    external_id: str | None = None
    details_url: str | None = None
    title: str | None = None
    summary: str | None = None
    text: str | None = None
    annotations: tuple[Annotation, ...] = ()  # appended to the run's, as GitHub does

    @classmethod
    def from_body(cls, body: object) -> CheckRunFields:
        data: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
        output = data.get("output")
        out: Mapping[str, Any] = output if isinstance(output, Mapping) else {}
        return cls(
            name=_text(data, "name"),
            status=_text(data, "status"),
            conclusion=_text(data, "conclusion"),
            started_at=parse_time(data.get("started_at")),
            completed_at=parse_time(data.get("completed_at")),
            external_id=_text(data, "external_id"),
            details_url=_text(data, "details_url"),
            title=_text(out, "title"),
            summary=_text(out, "summary"),
            text=_text(out, "text"),
            annotations=annotations_from(out),
        )


def settle(run: CheckRun, fields: CheckRunFields, *, actions: bool) -> tuple[str, str | None]:
    """The status and conclusion ``run`` gets from ``fields``, or a 422 as GitHub answers."""
    conclusion = fields.conclusion
    if conclusion is not None:
        if conclusion == STALE:
            raise ApiError(422, STALE_REFUSED)
        if conclusion not in CONCLUSIONS:
            raise ApiError(422, UNKNOWN_CONCLUSION.format(conclusion=conclusion))
        # "Providing conclusion will automatically set the status parameter to completed."
        return COMPLETED, conclusion
    status = fields.status or run.status
    if status not in CHECK_STATUSES:
        raise ApiError(422, UNKNOWN_STATUS.format(status=status))
    if status in ACTIONS_ONLY_STATUSES and not actions:
        raise ApiError(422, ACTIONS_ONLY.format(status=status))
    if status == COMPLETED or fields.completed_at is not None:
        # Re-stating "completed" keeps the conclusion a run already has.
        if run.conclusion is None:
            raise ApiError(422, CONCLUSION_MISSING)
        return COMPLETED, run.conclusion
    return status, None  # back to queued or in progress: no conclusion yet


def apply(run: CheckRun, fields: CheckRunFields, now: float, *, actions: bool) -> bool:
    """Change ``run`` as GitHub would; True when it just completed or changed conclusion."""
    status, conclusion = settle(run, fields, actions=actions)
    before = (run.status, run.conclusion)
    if fields.name is not None:
        run.name = fields.name
    if fields.started_at is not None:
        run.started_at = fields.started_at
    if fields.external_id is not None:
        run.external_id = fields.external_id
    if fields.details_url is not None:
        run.details_url = fields.details_url
    run.annotations.extend(fields.annotations)
    for key in ("title", "summary", "text"):
        value = getattr(fields, key)
        if value is not None:
            setattr(run, key, value)
    if status != COMPLETED:
        run.completed_at = None
    elif fields.completed_at is not None:
        run.completed_at = fields.completed_at
    elif run.status != COMPLETED or run.completed_at is None:
        run.completed_at = now
    run.status, run.conclusion = status, conclusion
    run.updated_at = now
    return status == COMPLETED and before != (status, conclusion)


def passing(run: CheckRun) -> bool:
    return run.status == COMPLETED and run.conclusion in PASSING_CONCLUSIONS


def failing(run: CheckRun) -> bool:
    return run.status == COMPLETED and run.conclusion not in PASSING_CONCLUSIONS


def runs_at(repo: Repo, sha: str) -> list[CheckRun]:
    """The check runs on commit ``sha``, oldest first."""
    return [run for run in repo.check_runs.values() if run.head_sha == sha]


def latest_by_name(runs: Iterable[CheckRun]) -> list[CheckRun]:
    """The newest run of each name (a re-run supersedes the old one), newest first."""
    seen: dict[str, CheckRun] = {}
    for run in sorted(runs, key=lambda r: r.id, reverse=True):
        seen.setdefault(run.name, run)
    return list(seen.values())


def suite_state(runs: Iterable[CheckRun]) -> tuple[str, str | None]:
    """A check suite's status and conclusion, from its runs."""
    listed = list(runs)
    if listed and all(run.status == COMPLETED for run in listed):
        found = {run.conclusion for run in listed}
        return COMPLETED, next((c for c in SUITE_PRECEDENCE if c in found), None)
    if any(run.status != QUEUED for run in listed):
        return "in_progress", None
    return QUEUED, None


def pulls_at(repo: Repo, sha: str) -> list[Issue]:
    """Open pull requests whose head is ``sha`` (a check run's ``pull_requests``)."""
    return [
        issue
        for issue in repo.issues.values()
        if issue.pull is not None and issue.state == "open" and issue.pull.head_sha == sha
    ]


class CheckRunOps:
    def __init__(self, sandbox: GitHubCore) -> None:
        self.sandbox = sandbox
        self.apps: dict[str, App] = {}

    def app(self, slug: str) -> App:
        """The App ``slug`` (created on first use): the stand-in's own, Actions or another CI."""
        found = self.apps.get(slug)
        if found is not None:
            return found
        sandbox = self.sandbox
        if slug == sandbox.app_slug:
            app_id, name, owner, permissions = int(sandbox.app_id), slug, slug, APP_PERMISSIONS
        elif slug in KNOWN_APPS:
            app_id, name, owner = KNOWN_APPS[slug]
            permissions = CI_APP_PERMISSIONS
        else:
            # Any other CI App: owned by an organization of its own name, which is enough
            # for the ``app`` object GitHub embeds in each run.
            app_id, name, owner, permissions = sandbox.ids(), slug, slug, CI_APP_PERMISSIONS
        found = App(
            id=app_id,
            slug=slug,
            name=name,
            owner=sandbox.user(owner, kind="Organization"),
            bot=sandbox.user(f"{slug}[bot]", kind="Bot"),
            created_at=sandbox.clock(),
            permissions=dict(permissions),
        )
        self.apps[slug] = found
        return found

    def find(self, repo: Repo, run_id: str | int) -> CheckRun:
        try:
            return repo.check_runs[int(run_id)]
        except (KeyError, ValueError) as exc:
            raise not_found() from exc

    def create(
        self, repo: Repo, app: App, head_sha: str, fields: CheckRunFields
    ) -> tuple[CheckRun, bool]:
        """A new run on ``head_sha`` (a commit of ``repo``); True when it is born completed."""
        if not fields.name:
            raise ApiError(422, NAME_MISSING)
        sandbox = self.sandbox
        now = sandbox.clock()
        suite = repo.check_suites.get((app.id, head_sha))
        if suite is None:
            suite = repo.check_suites[(app.id, head_sha)] = sandbox.ids()
        run = CheckRun(
            id=sandbox.ids(),
            head_sha=head_sha,
            name=fields.name,
            app=app,
            suite_id=suite,
            status=QUEUED,
            conclusion=None,
            started_at=now,
            completed_at=None,
            external_id="",
            # "If the integrator does not provide this, the homepage of the GitHub App is used."
            details_url=sandbox.json.app_homepage(app),
            title=None,
            summary=None,
            text=None,
            created_at=now,
            updated_at=now,
        )
        completed = apply(run, fields, now, actions=app.slug == ACTIONS_SLUG)
        repo.check_runs[run.id] = run
        return run, completed

    def update(self, run: CheckRun, fields: CheckRunFields) -> bool:
        """Change ``run``; True when that completed it (or changed its conclusion)."""
        return apply(run, fields, self.sandbox.clock(), actions=run.app.slug == ACTIONS_SLUG)

    def listed(
        self,
        repo: Repo,
        sha: str,
        *,
        name: str | None,
        status: str | None,
        latest: bool,
        app_id: int | None,
    ) -> list[CheckRun]:
        """``checks/list-for-ref``: newest first, ``latest`` keeping the newest run per name."""
        runs = [
            run
            for run in runs_at(repo, sha)
            if (name is None or run.name == name) and (app_id is None or run.app.id == app_id)
        ]
        found = latest_by_name(runs) if latest else sorted(runs, key=lambda r: -r.id)
        return [run for run in found if status is None or run.status == status]

    # -- announcing ------------------------------------------------------------------------

    def head_branch_sync(self, repo: Repo, sha: str) -> str | None:
        """A branch whose head is ``sha`` (reads git: run it off the event loop)."""
        branches = self.sandbox.checks.branches_at_sync(repo, sha)
        return branches[0][0] if branches else None

    def announce(self, repo: Repo, run: CheckRun, action: str, head_branch: str | None) -> None:
        """Queue the ``check_run`` webhook (``created`` or ``completed``), sent by the App's bot."""
        json = self.sandbox.json
        # The suite is for the branch CI ran on: an open pull's head first.
        pulls = pulls_at(repo, run.head_sha)
        branch = pulls[0].pull.head_ref if pulls and pulls[0].pull else head_branch
        payload = self.sandbox.events.check_run(
            action,
            repo,
            json.check_run(repo, run),
            json.check_suite(repo, run, branch),
            run.app.bot,
        )
        self.sandbox.emit("check_run", payload, repo)

    def _announce_all(
        self, repo: Repo, run: CheckRun, created: bool, completed: bool, branch: str | None
    ) -> None:
        # GitHub sends both when a run is created already completed.
        if created:
            self.announce(repo, run, "created", branch)
        if completed:
            self.announce(repo, run, COMPLETED, branch)

    async def reported(self, repo: Repo, run: CheckRun, *, created: bool, completed: bool) -> None:
        """After a run changed over the API: its webhooks, then any auto-merge it allows."""
        branch = await self.sandbox.git(self.head_branch_sync, repo, run.head_sha)
        self._announce_all(repo, run, created, completed, branch)
        if completed:
            await self.sandbox.land_ready(repo, run.head_sha)

    def reported_sync(self, repo: Repo, run: CheckRun, *, created: bool, completed: bool) -> None:
        self._announce_all(repo, run, created, completed, self.head_branch_sync(repo, run.head_sha))
        if completed:
            self.sandbox.land_ready_sync(repo, run.head_sha)

    # -- the setup API's side (synchronous; refusals as ValueError) --------------------------

    def report_sync(self, repo: Repo, app_slug: str, sha: str, fields: CheckRunFields) -> JSON:
        try:
            run, completed = self.create(repo, self.app(app_slug), sha, fields)
        except ApiError as error:
            raise ValueError(error.message) from error
        self.reported_sync(repo, run, created=True, completed=completed)
        return self.sandbox.json.check_run(repo, run)

    def update_sync(self, repo: Repo, run_id: int, fields: CheckRunFields) -> JSON:
        try:
            run = self.find(repo, run_id)
            completed = self.update(run, fields)
        except ApiError as error:
            raise ValueError(f"check run {run_id}: {error.message}") from error
        self.reported_sync(repo, run, created=False, completed=completed)
        return self.sandbox.json.check_run(repo, run)
