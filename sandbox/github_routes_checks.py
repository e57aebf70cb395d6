"""Check-run operations of the GitHub stand-in (the Checks API, runs only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.github_annotations import annotation_json
from sandbox.github_check_runs import (
    CHECKS_READ_ONLY,
    OTHER_APPS_RUN,
    CheckRunFields,
)
from sandbox.github_http import ApiError, Call, Reply, Router, not_found, paginate
from sandbox.github_state import App

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox

NO_COMMIT = "No commit found for SHA: {sha}"
FILTER_LATEST = "latest"


def register(router: Router, sandbox: GitHubSandbox) -> None:
    routes = CheckRoutes(sandbox)
    router.add("POST", "/repos/{owner}/{repo}/check-runs", "checks/create", routes.create)
    router.add("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}", "checks/get", routes.get)
    router.add(
        "PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}", "checks/update", routes.update
    )
    router.add(
        "GET",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations",
        "checks/list-annotations",
        routes.annotations,
    )
    router.add(
        "GET",
        "/repos/{owner}/{repo}/commits/{ref+}/check-runs",
        "checks/list-for-ref",
        routes.list_for_ref,
    )


class CheckRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    def _writer(self, call: Call) -> App:
        """The App behind the token, if its installation may write checks (else 403)."""
        token = call.token
        installation = self.sb.installations.get(token.installation_id) if token else None
        if installation is None or installation.permissions.get("checks") != "write":
            raise ApiError(403, CHECKS_READ_ONLY)
        return self.sb.check_runs.app(self.sb.app_slug)

    async def create(self, call: Call) -> Reply:
        repo = call.the_repo
        app = self._writer(call)
        fields = CheckRunFields.from_body(call.body)
        wanted = str(call.field("head_sha", ""))
        # A full commit sha of this repository: GitHub resolves no branch names here.
        found = await self.sb.git(self.sb.store.object_type, repo.full_name, wanted)
        if found != "commit":
            raise ApiError(422, NO_COMMIT.format(sha=wanted))
        run, completed = self.sb.check_runs.create(repo, app, wanted, fields)
        await self.sb.check_runs.reported(repo, run, created=True, completed=completed)
        return Reply(201, self.sb.json.check_run(repo, run))

    async def get(self, call: Call) -> Reply:
        repo = call.the_repo
        run = self.sb.check_runs.find(repo, call.params["check_run_id"])
        return Reply(200, self.sb.json.check_run(repo, run))

    async def update(self, call: Call) -> Reply:
        repo = call.the_repo
        run = self.sb.check_runs.find(repo, call.params["check_run_id"])
        app = self._writer(call)
        if run.app.id != app.id:
            raise ApiError(403, OTHER_APPS_RUN.format(app_id=app.id))
        completed = self.sb.check_runs.update(run, CheckRunFields.from_body(call.body))
        await self.sb.check_runs.reported(repo, run, created=False, completed=completed)
        return Reply(200, self.sb.json.check_run(repo, run))

    async def annotations(self, call: Call) -> Reply:
        """A run's annotations, oldest first, paginated like GitHub's other lists."""
        repo = call.the_repo
        run = self.sb.check_runs.find(repo, call.params["check_run_id"])
        url = f"{self.sb.base_url}/repos/{repo.full_name}/check-runs/{run.id}/annotations"
        page, headers = paginate(call, run.annotations, url)
        web = f"{self.sb.json.html}/{repo.full_name}/blob/{run.head_sha}"
        items = [annotation_json(a, f"{web}/{a.path}") for a in page]
        return Reply(200, items, headers)

    async def list_for_ref(self, call: Call) -> Reply:
        repo = call.the_repo
        sha = await self.sb.git(self.sb.store.resolve_commit, repo.full_name, call.params["ref"])
        if sha is None:
            raise not_found()
        app_id = call.arg("app_id")
        runs = self.sb.check_runs.listed(
            repo,
            sha,
            name=call.arg("check_name"),
            status=call.arg("status"),
            latest=(call.arg("filter") or FILTER_LATEST) == FILTER_LATEST,
            app_id=int(app_id) if app_id and app_id.isdigit() else None,
        )
        url = f"{self.sb.base_url}/repos/{repo.full_name}/commits/{call.params['ref']}/check-runs"
        page, headers = paginate(call, runs, url)
        body = {
            "total_count": len(runs),
            "check_runs": [self.sb.json.check_run(repo, run) for run in page],
        }
        return Reply(200, body, headers)
