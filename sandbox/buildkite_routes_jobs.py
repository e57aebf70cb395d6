"""Job-level endpoints of the Buildkite stand-in: the jobs list, retries, logs, artifacts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web

from sandbox import buildkite_logs
from sandbox.buildkite_http import (
    ApiError,
    cursor_page,
    json_response,
    not_found,
    paginate,
    values,
)
from sandbox.buildkite_routes_builds import BUILD, RouteEntry, add
from sandbox.buildkite_state import RetryRefused

if TYPE_CHECKING:
    from sandbox.buildkite_server import BuildkiteSandbox

JOB = BUILD + "/jobs/{job}"
ARTIFACT = JOB + "/artifacts/{artifact}"
LogHandler = Callable[[web.Request], Awaitable[web.Response]]
STORE_PATH = "/artifact-store"
TWO_AUTH_MECHANISMS = "Only one auth mechanism allowed"
BAD_SIGNATURE = "Request has expired or its signature does not match"


class JobRoutes:
    def __init__(self, sandbox: BuildkiteSandbox) -> None:
        self.sb = sandbox

    def table(self) -> list[RouteEntry]:
        """What this module serves; a name is what the request log shows for its route."""
        return [
            ("GET", BUILD + "/jobs", self.list_jobs, "jobs.list"),
            ("PUT", JOB + "/retry", self.retry, "jobs.retry"),
            ("PUT", "/v2/organizations/{org}/jobs/{job}/retry", self.retry, "jobs.retry_by_id"),
            ("GET", JOB + "/log", self.log_handler(""), "jobs.log"),
            ("GET", JOB + "/log.txt", self.log_handler(".txt"), "jobs.log_txt"),
            ("GET", JOB + "/log.html", self.log_handler(".html"), "jobs.log_html"),
            ("GET", JOB + "/artifacts", self.job_artifacts, "artifacts.list_for_job"),
            ("GET", ARTIFACT, self.get_artifact, "artifacts.get"),
            ("GET", ARTIFACT + "/download", self.download, "artifacts.download"),
        ]

    async def list_jobs(self, request: web.Request) -> web.Response:
        build = self.sb.find_build(request)
        states, step_keys = values(request, "state"), values(request, "step_key")
        found = [
            job
            for job in build.jobs
            if (not states or job.state in states) and (not step_keys or job.step_key in step_keys)
        ]
        chunk, next_url = cursor_page(request, found)
        items = [self.sb.json.job(build, job) for job in chunk]
        return json_response({"items": items, "links": {"next": next_url}})

    async def retry(self, request: web.Request) -> web.Response:
        build = self.sb.find_build(request) if "pipeline" in request.match_info else None
        job = self.sb.find_job(request, build)
        try:
            new_job, transition = self.sb.world.retry(job)
        except RetryRefused as refused:
            raise ApiError(400, str(refused)) from refused
        # The answer shows the new job as Buildkite returns it: scheduled, not yet run.
        answer = json_response(self.sb.json.job(transition.build, new_job))
        self.sb.retried(new_job, transition)
        return answer

    def log_handler(self, suffix: str) -> LogHandler:
        async def serve(request: web.Request) -> web.Response:
            build = self.sb.find_build(request)
            job = self.sb.find_job(request, build)
            url = self.sb.json.job_url(build, job) + "/log"
            return buildkite_logs.respond(request, job.log, url, suffix)

        return serve

    async def job_artifacts(self, request: web.Request) -> web.Response:
        build = self.sb.find_build(request)
        job = self.sb.find_job(request, build)
        chunk, headers = paginate(request, job.artifacts)
        return json_response([self.sb.json.artifact(build, job, a) for a in chunk], headers=headers)

    def _find_artifact(self, request: web.Request) -> tuple[web.Response, str]:
        build = self.sb.find_build(request)
        job = self.sb.find_job(request, build)
        for artifact in job.artifacts:
            if artifact.id == request.match_info["artifact"]:
                return json_response(self.sb.json.artifact(build, job, artifact)), artifact.id
        raise not_found()

    async def get_artifact(self, request: web.Request) -> web.Response:
        return self._find_artifact(request)[0]

    async def download(self, request: web.Request) -> web.Response:
        _, artifact_id = self._find_artifact(request)
        location = self.sb.artifact_link(self.sb.world.artifacts[artifact_id])
        # Buildkite answers 302 with the signed URL both in Location and in the body.
        return json_response({"url": location}, 302, {"Location": location})


def register(router: web.UrlDispatcher, sandbox: BuildkiteSandbox) -> None:
    for method, path, handler, name in JobRoutes(sandbox).table():
        add(router, method, path, handler, name)


def register_store(router: web.UrlDispatcher, sandbox: BuildkiteSandbox) -> None:
    """The object store artifact downloads redirect to: another origin, signed URLs."""

    async def artifact_store(request: web.Request) -> web.Response:
        artifact = sandbox.world.artifacts.get(request.match_info["artifact"])
        if artifact is None:
            raise not_found()
        if "Authorization" in request.headers:
            # Like S3: a signed URL plus a header credential is refused, which also
            # catches a client leaking its Buildkite token to another origin.
            raise ApiError(400, TWO_AUTH_MECHANISMS)
        if not sandbox.artifact_signature_ok(artifact, request.query.get("signature", "")):
            raise ApiError(403, BAD_SIGNATURE)
        return web.Response(body=artifact.data, content_type="application/octet-stream")

    router.add_get(STORE_PATH + "/{artifact}", artifact_store, name="artifact_store")
