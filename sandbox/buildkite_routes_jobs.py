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
from sandbox.buildkite_routes_builds import BUILD, add
from sandbox.buildkite_state import RetryRefused

if TYPE_CHECKING:
    from sandbox.buildkite_server import BuildkiteSandbox

JOB = BUILD + "/jobs/{job}"
ARTIFACT = JOB + "/artifacts/{artifact}"
LogHandler = Callable[[web.Request], Awaitable[web.Response]]
STORE_PATH = "/artifact-store"
TWO_AUTH_MECHANISMS = "Only one auth mechanism allowed"
BAD_SIGNATURE = "Request has expired or its signature does not match"


def register(router: web.UrlDispatcher, sandbox: BuildkiteSandbox) -> None:
    async def list_jobs(request: web.Request) -> web.Response:
        build = sandbox.find_build(request)
        states, step_keys = values(request, "state"), values(request, "step_key")
        found = [
            job
            for job in build.jobs
            if (not states or job.state in states) and (not step_keys or job.step_key in step_keys)
        ]
        chunk, next_url = cursor_page(request, found)
        items = [sandbox.json.job(build, job) for job in chunk]
        return json_response({"items": items, "links": {"next": next_url}})

    async def retry(request: web.Request) -> web.Response:
        build = sandbox.find_build(request) if "pipeline" in request.match_info else None
        job = sandbox.find_job(request, build)
        try:
            new_job, transition = sandbox.world.retry(job)
        except RetryRefused as refused:
            raise ApiError(400, str(refused)) from refused
        # The answer shows the new job as Buildkite returns it: scheduled, not yet run.
        answer = json_response(sandbox.json.job(transition.build, new_job))
        sandbox.retried(new_job, transition)
        return answer

    def log_handler(suffix: str) -> LogHandler:
        async def serve(request: web.Request) -> web.Response:
            build = sandbox.find_build(request)
            job = sandbox.find_job(request, build)
            url = sandbox.json.job_url(build, job) + "/log"
            return buildkite_logs.respond(request, job.log, url, suffix)

        return serve

    async def job_artifacts(request: web.Request) -> web.Response:
        build = sandbox.find_build(request)
        job = sandbox.find_job(request, build)
        chunk, headers = paginate(request, job.artifacts)
        return json_response([sandbox.json.artifact(build, job, a) for a in chunk], headers=headers)

    def find_artifact(request: web.Request) -> tuple[web.Response, str]:
        build = sandbox.find_build(request)
        job = sandbox.find_job(request, build)
        for artifact in job.artifacts:
            if artifact.id == request.match_info["artifact"]:
                return json_response(sandbox.json.artifact(build, job, artifact)), artifact.id
        raise not_found()

    async def get_artifact(request: web.Request) -> web.Response:
        return find_artifact(request)[0]

    async def download(request: web.Request) -> web.Response:
        _, artifact_id = find_artifact(request)
        location = sandbox.artifact_link(sandbox.world.artifacts[artifact_id])
        # Buildkite answers 302 with the signed URL both in Location and in the body.
        return json_response({"url": location}, 302, {"Location": location})

    add(router, "GET", BUILD + "/jobs", list_jobs, "jobs.list")
    add(router, "PUT", JOB + "/retry", retry, "jobs.retry")
    add(router, "PUT", "/v2/organizations/{org}/jobs/{job}/retry", retry, "jobs.retry_by_id")
    add(router, "GET", JOB + "/log", log_handler(""), "jobs.log")
    add(router, "GET", JOB + "/log.txt", log_handler(".txt"), "jobs.log_txt")
    add(router, "GET", JOB + "/log.html", log_handler(".html"), "jobs.log_html")
    add(router, "GET", JOB + "/artifacts", job_artifacts, "artifacts.list_for_job")
    add(router, "GET", ARTIFACT, get_artifact, "artifacts.get")
    add(router, "GET", ARTIFACT + "/download", download, "artifacts.download")


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
