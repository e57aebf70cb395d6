"""Build-level endpoints of the Buildkite stand-in: lists, one build, retry-failed, annotations,
the build's artifacts."""

from __future__ import annotations

import uuid
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
from sandbox.buildkite_state import BUILD_FINISHED_STATES, Annotation, Build, RetryRefused

if TYPE_CHECKING:
    from sandbox.buildkite_server import BuildkiteSandbox

BUILDS = "/v2/organizations/{org}/pipelines/{pipeline}/builds"
BUILD = BUILDS + "/{number}"
ANNOTATION_STYLES = frozenset({"default", "success", "info", "warning", "error"})
BODY_REQUIRED = "Validation failed: Body can't be blank"
BAD_STYLE = "Validation failed: Style is not included in the list"
SLASH_SUFFIX = ".slash"  # aiohttp wants unique route names; the log drops this suffix
DEFAULT_RETRY_STATES = ("failed", "timed_out")
# "finished" is a filter alias Buildkite accepts for every final state.
_STATE_ALIASES = {"finished": BUILD_FINISHED_STATES | {"blocked"}}


def add(router: web.UrlDispatcher, method: str, path: str, handler: Any, name: str) -> None:
    """Serve ``path`` with and without a trailing slash, as Buildkite's Rails routes do."""
    router.add_route(method, path, handler, name=name)
    router.add_route(method, path + "/", handler, name=name + SLASH_SUFFIX)


def register(router: web.UrlDispatcher, sandbox: BuildkiteSandbox) -> None:
    def matches(build: Build, request: web.Request) -> bool:
        commits, branches = values(request, "commit"), values(request, "branch")
        states: set[str] = set()
        for state in values(request, "state"):
            states |= _STATE_ALIASES.get(state, {state})
        return (
            (not commits or build.commit in commits)
            and (not branches or build.branch in branches)
            and (not states or build.state in states)
        )

    def render(build: Build, request: web.Request) -> dict[str, Any]:
        if flag(request, "exclude_jobs"):
            return sandbox.json.build(build, jobs=None)
        retried = flag(request, "include_retried_jobs")
        return sandbox.json.build(build, jobs=build.jobs if retried else build.latest_jobs())

    def listing(request: web.Request, pipeline: str | None) -> web.Response:
        if pipeline is not None and pipeline not in sandbox.world.pipelines:
            raise not_found()
        found = [
            build
            for build in sorted(sandbox.world.builds, key=lambda b: -b.sequence)
            if (pipeline is None or build.pipeline.slug == pipeline) and matches(build, request)
        ]
        chunk, headers = paginate(request, found)
        return json_response([render(build, request) for build in chunk], headers=headers)

    async def list_all(request: web.Request) -> web.Response:
        return listing(request, None)

    async def list_for_pipeline(request: web.Request) -> web.Response:
        return listing(request, request.match_info["pipeline"])

    async def get_build(request: web.Request) -> web.Response:
        return json_response(render(sandbox.find_build(request), request))

    async def retry_failed_jobs(request: web.Request) -> web.Response:
        build = sandbox.find_build(request)
        body = await read_json(request)
        wanted = str(body.get("states", "")) if isinstance(body, dict) else ""
        states = [s.strip() for s in wanted.split(",") if s.strip()] or DEFAULT_RETRY_STATES
        for job in build.latest_jobs():
            if job.state in states:
                try:
                    new_job, transition = sandbox.world.retry(job)
                except RetryRefused:
                    continue
                sandbox.retried(new_job, transition)
        return json_response(sandbox.json.build(build, jobs=build.latest_jobs()))

    async def list_annotations(request: web.Request) -> web.Response:
        build = sandbox.find_build(request)
        chunk, headers = paginate(request, build.annotations)
        return json_response([sandbox.json.annotation(a) for a in chunk], headers=headers)

    async def create_annotation(request: web.Request) -> web.Response:
        build = sandbox.find_build(request)
        body = await read_json(request)
        text = str(body.get("body") or "") if isinstance(body, dict) else ""
        if not isinstance(body, dict) or not text.strip():
            raise ApiError(422, BODY_REQUIRED)
        context, style = str(body.get("context") or "default"), str(body.get("style") or "default")
        if style not in ANNOTATION_STYLES:
            raise ApiError(422, BAD_STYLE)
        now = sandbox.clock()
        existing = next((a for a in build.annotations if a.context == context), None)
        if existing is None:
            existing = Annotation(str(uuid.uuid4()), context, style, "", now, now)
            build.annotations.append(existing)
        # Same context: Buildkite replaces the body, or appends to it with "append": true.
        existing.body = existing.body + text if body.get("append") else text
        existing.style, existing.updated_at = style, now
        return json_response(sandbox.json.annotation(existing), 201)

    async def build_artifacts(request: web.Request) -> web.Response:
        build = sandbox.find_build(request)
        pairs = [(job, artifact) for job in build.jobs for artifact in job.artifacts]
        chunk, headers = paginate(request, pairs)
        rendered = [sandbox.json.artifact(build, job, artifact) for job, artifact in chunk]
        return json_response(rendered, headers=headers)

    add(router, "GET", "/v2/builds", list_all, "builds.list_all")
    add(router, "GET", "/v2/organizations/{org}/builds", list_all, "builds.list_for_org")
    add(router, "GET", BUILDS, list_for_pipeline, "builds.list")
    add(router, "GET", BUILD, get_build, "builds.get")
    add(router, "PUT", BUILD + "/retry_failed_jobs", retry_failed_jobs, "builds.retry_failed_jobs")
    add(router, "GET", BUILD + "/annotations", list_annotations, "annotations.list")
    add(router, "POST", BUILD + "/annotations", create_annotation, "annotations.create")
    add(router, "GET", BUILD + "/artifacts", build_artifacts, "artifacts.list_for_build")
