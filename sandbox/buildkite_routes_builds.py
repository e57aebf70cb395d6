"""Build-level endpoints of the Buildkite stand-in: lists, one build, a new build, retry-failed,
annotations, the build's artifacts."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from sandbox.buildkite_http import (
    ApiError,
    flag,
    json_response,
    not_found,
    paginate,
    read_json,
    values,
)
from sandbox.buildkite_model import BUILD_FINISHED_STATES, Annotation, Build
from sandbox.buildkite_state import RetryRefused

if TYPE_CHECKING:
    from sandbox.buildkite_server import BuildkiteSandbox

BUILDS = "/v2/organizations/{org}/pipelines/{pipeline}/builds"
BUILD = BUILDS + "/{number}"
ANNOTATION_STYLES = frozenset({"default", "success", "info", "warning", "error"})
BODY_REQUIRED = "Validation failed: Body can't be blank"
BAD_STYLE = "Validation failed: Style is not included in the list"
# Buildkite's words for a create-build body without a commit or a branch, or with an env
# that is not a map of strings.
CREATE_NEEDS = "Validation failed: {field} can't be blank"
BAD_ENV = "Validation failed: Env must be a hash of strings"
API_SOURCE = "api"  # a build made through the REST API, as Buildkite's `source` says
SLASH_SUFFIX = ".slash"  # aiohttp wants unique route names; the log drops this suffix
DEFAULT_RETRY_STATES = ("failed", "timed_out")
# "finished" is a filter alias Buildkite accepts for every final state.
_STATE_ALIASES = {"finished": BUILD_FINISHED_STATES | {"blocked"}}


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RouteEntry = tuple[str, str, Handler, str]  # method, path, handler, route name


def add(router: web.UrlDispatcher, method: str, path: str, handler: Handler, name: str) -> None:
    """Serve ``path`` with and without a trailing slash, as Buildkite's Rails routes do."""
    router.add_route(method, path, handler, name=name)
    router.add_route(method, path + "/", handler, name=name + SLASH_SUFFIX)


class BuildRoutes:
    def __init__(self, sandbox: BuildkiteSandbox) -> None:
        self.sb = sandbox

    def table(self) -> list[RouteEntry]:
        """What this module serves; a name is what the request log shows for its route."""
        return [
            ("GET", "/v2/builds", self.list_all, "builds.list_all"),
            ("GET", "/v2/organizations/{org}/builds", self.list_all, "builds.list_for_org"),
            ("GET", BUILDS, self.list_for_pipeline, "builds.list"),
            ("POST", BUILDS, self.create_build, "builds.create"),
            ("GET", BUILD, self.get_build, "builds.get"),
            (
                "PUT",
                BUILD + "/retry_failed_jobs",
                self.retry_failed_jobs,
                "builds.retry_failed_jobs",
            ),
            ("GET", BUILD + "/annotations", self.list_annotations, "annotations.list"),
            ("POST", BUILD + "/annotations", self.create_annotation, "annotations.create"),
            ("GET", BUILD + "/artifacts", self.build_artifacts, "artifacts.list_for_build"),
        ]

    def _matches(self, build: Build, request: web.Request) -> bool:
        commits, branches = values(request, "commit"), values(request, "branch")
        states: set[str] = set()
        for state in values(request, "state"):
            states |= _STATE_ALIASES.get(state, {state})
        return (
            (not commits or build.commit in commits)
            and (not branches or build.branch in branches)
            and (not states or build.state in states)
        )

    def _render(self, build: Build, request: web.Request) -> dict[str, Any]:
        if flag(request, "exclude_jobs"):
            return self.sb.json.build(build, jobs=None)
        retried = flag(request, "include_retried_jobs")
        return self.sb.json.build(build, jobs=build.jobs if retried else build.latest_jobs())

    def _listing(self, request: web.Request, pipeline: str | None) -> web.Response:
        if pipeline is not None and pipeline not in self.sb.world.pipelines:
            raise not_found()
        found = [
            build
            for build in sorted(self.sb.world.builds, key=lambda b: -b.sequence)
            if (pipeline is None or build.pipeline.slug == pipeline)
            and self._matches(build, request)
        ]
        chunk, headers = paginate(request, found)
        return json_response([self._render(build, request) for build in chunk], headers=headers)

    async def list_all(self, request: web.Request) -> web.Response:
        return self._listing(request, None)

    async def list_for_pipeline(self, request: web.Request) -> web.Response:
        return self._listing(request, request.match_info["pipeline"])

    async def create_build(self, request: web.Request) -> web.Response:
        """Buildkite's create-build call: a build of ``commit`` on ``branch`` that runs the
        jobs the test planned for the pipeline (``BuildkiteSandbox.plan_builds``), with its
        webhooks, as if an agent had run them."""
        pipeline = request.match_info["pipeline"]
        if pipeline not in self.sb.world.pipelines:
            raise not_found()
        body = await read_json(request)
        fields = body if isinstance(body, dict) else {}
        commit, branch = fields.get("commit"), fields.get("branch")
        for name, value in (("Commit", commit), ("Branch", branch)):
            if not isinstance(value, str) or not value.strip():
                raise ApiError(422, CREATE_NEEDS.format(field=name))
        env = fields.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ApiError(422, BAD_ENV)
        build = self.sb.world.create_build(
            pipeline,
            commit=str(commit),
            branch=str(branch),
            jobs=self.sb.planned_jobs(pipeline),
            message=str(fields.get("message") or ""),
            pull_request=_pull_request(fields),
            state=None,
            env={str(k): v for k, v in env.items()},
            source=API_SOURCE,
        )
        # As Buildkite tells of it: scheduled, and once its jobs are done (planned jobs in
        # a final state finish it at once) each job finished and the build finished.
        self.sb.emit_build("build.scheduled", build)
        if build.finished_at is not None:
            for job in build.latest_jobs():
                self.sb.emit_job("job.finished", job)
            self.sb.emit_build("build.finished", build)
        return json_response(self.sb.json.build(build, jobs=build.latest_jobs()), 201)

    async def get_build(self, request: web.Request) -> web.Response:
        return json_response(self._render(self.sb.find_build(request), request))

    async def retry_failed_jobs(self, request: web.Request) -> web.Response:
        build = self.sb.find_build(request)
        body = await read_json(request)
        wanted = str(body.get("states", "")) if isinstance(body, dict) else ""
        states = [s.strip() for s in wanted.split(",") if s.strip()] or DEFAULT_RETRY_STATES
        for job in build.latest_jobs():
            if job.state in states:
                try:
                    new_job, transition = self.sb.world.retry(job)
                except RetryRefused:
                    continue
                self.sb.retried(new_job, transition)
        return json_response(self.sb.json.build(build, jobs=build.latest_jobs()))

    async def list_annotations(self, request: web.Request) -> web.Response:
        build = self.sb.find_build(request)
        chunk, headers = paginate(request, build.annotations)
        return json_response([self.sb.json.annotation(a) for a in chunk], headers=headers)

    async def create_annotation(self, request: web.Request) -> web.Response:
        build = self.sb.find_build(request)
        body = await read_json(request)
        text = str(body.get("body") or "") if isinstance(body, dict) else ""
        if not isinstance(body, dict) or not text.strip():
            raise ApiError(422, BODY_REQUIRED)
        context, style = str(body.get("context") or "default"), str(body.get("style") or "default")
        if style not in ANNOTATION_STYLES:
            raise ApiError(422, BAD_STYLE)
        now = self.sb.clock()
        existing = next((a for a in build.annotations if a.context == context), None)
        if existing is None:
            existing = Annotation(str(uuid.uuid4()), context, style, "", now, now)
            build.annotations.append(existing)
        # Same context: Buildkite replaces the body, or appends to it with "append": true.
        existing.body = existing.body + text if body.get("append") else text
        existing.style, existing.updated_at = style, now
        return json_response(self.sb.json.annotation(existing), 201)

    async def build_artifacts(self, request: web.Request) -> web.Response:
        build = self.sb.find_build(request)
        pairs = [(job, artifact) for job in build.jobs for artifact in job.artifacts]
        chunk, headers = paginate(request, pairs)
        rendered = [self.sb.json.artifact(build, job, artifact) for job, artifact in chunk]
        return json_response(rendered, headers=headers)


def _pull_request(fields: dict[str, Any]) -> dict[str, str] | None:
    """The build's ``pull_request`` from the create-build fields that name it."""
    number = fields.get("pull_request_id")
    if number is None or isinstance(number, bool):
        return None
    found = {"id": str(number), "base": str(fields.get("pull_request_base_branch") or "main")}
    repository = fields.get("pull_request_repository")
    if isinstance(repository, str) and repository:
        found["repository"] = repository
    return found


def register(router: web.UrlDispatcher, sandbox: BuildkiteSandbox) -> None:
    for method, path, handler, name in BuildRoutes(sandbox).table():
        add(router, method, path, handler, name)
