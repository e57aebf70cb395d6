"""A Buildkite stand-in on loopback: REST v2 shapes, retries, logs, artifacts, webhooks.

Tests and the demo create pipelines and builds through the synchronous setup
API, point the bot's Buildkite client at ``base_url`` and its webhook intake at
``webhook_url``; every request is recorded, and faults (latency, 5xx, 429) can
be planned.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from sandbox import buildkite_routes_access, buildkite_routes_builds, buildkite_routes_jobs
from sandbox.buildkite_faults import RATE_LIMIT_MESSAGE, Faults, RateLimits, fault_message
from sandbox.buildkite_http import ApiError, json_response, not_found
from sandbox.buildkite_json import SANDBOX_USER, BuildkiteJson
from sandbox.buildkite_model import Artifact, Build, Job, Transition
from sandbox.buildkite_routes_builds import SLASH_SUFFIX
from sandbox.buildkite_routes_jobs import STORE_PATH
from sandbox.buildkite_state import DEFAULT_REPOSITORY, JobSpec, World, as_outcome
from sandbox.buildkite_webhooks import BuildkiteWebhooks, RecordedDelivery

log = logging.getLogger(__name__)

API_PREFIX = "/v2"
AUTH_REQUIRED = (
    "Authentication required. Please supply a valid API Access Token: "
    "see the Buildkite REST API authentication docs"
)
SANDBOX_BUG = "sandbox bug on {method} {path}: {error!r}"
BUILD_NOT_FINISHED = "build {slug}#{number} is {state}: finish its jobs first"
# What a build made through the REST API runs when the test planned nothing.
DEFAULT_PLANNED_JOBS = (JobSpec("pipeline-upload", ":pipeline: Pipeline upload"),)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str | list[str]]
    route: str | None  # the stand-in's name for the endpoint, e.g. "jobs.retry"
    status: int
    started: float
    finished: float
    body: object | None


class BuildkiteSandbox:
    def __init__(
        self,
        *,
        organization: str = "vllm",
        api_token: str,
        webhook_token: str,
        signature_mode: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.organization = organization
        self.clock = clock
        self.api_tokens = {api_token}
        self.world = World(clock)
        self.faults = Faults()
        self.rate_limits = RateLimits(clock)
        self.webhooks = BuildkiteWebhooks(webhook_token, signature_mode, clock)
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []  # stand-in bugs (answered 500)
        self.base_url = ""
        self.root_url = ""
        self.json = BuildkiteJson("", "", organization)
        self._signing_key = secrets.token_bytes(16)
        self.store_url = ""  # the artifact store's origin (an S3 stand-in)
        self._runners: list[web.AppRunner] = []
        self.on_request: Callable[[str, str], Awaitable[None]] | None = None
        self.access_tokens = buildkite_routes_access.AccessTokenRoutes(self)
        self._planned: dict[str, list[JobSpec]] = {}  # by pipeline: what API builds run

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def webhook_url(self) -> str | None:
        return self.webhooks.url

    @webhook_url.setter
    def webhook_url(self, url: str | None) -> None:
        self.webhooks.url = url

    @property
    def deliveries(self) -> list[RecordedDelivery]:
        return self.webhooks.deliveries

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        api = web.Application(middlewares=[self._middleware])
        buildkite_routes_builds.register(api.router, self)
        buildkite_routes_jobs.register(api.router, self)
        buildkite_routes_access.register(api.router, self.access_tokens)
        store = web.Application(middlewares=[self._middleware])
        buildkite_routes_jobs.register_store(store.router, self)
        self.root_url = await self._serve_app(api, host, port)
        self.store_url = await self._serve_app(store, host, 0)
        self.base_url = self.root_url + API_PREFIX
        self.json = BuildkiteJson(self.base_url, self.root_url + "/web", self.organization)
        self.webhooks.start()

    async def _serve_app(self, app: web.Application, host: str, port: int) -> str:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self._runners.append(runner)
        await web.TCPSite(runner, host, port).start()
        return f"http://{host}:{runner.addresses[0][1]}"

    async def close(self) -> None:
        await self.webhooks.close()
        while self._runners:
            await self._runners.pop().cleanup()

    async def flush(self) -> None:
        await self.webhooks.flush()

    def reset_log(self) -> None:
        self.requests.clear()
        self.webhooks.deliveries.clear()
        self.errors.clear()

    # -- setup API (synchronous unless it waits for webhooks) -------------------------------

    def add_api_token(self, token: str) -> None:
        """Another valid token (another user: it has its own rate-limit budget)."""
        self.api_tokens.add(token)

    def set_token_scopes(self, token: str, scopes: Sequence[str]) -> None:
        """The REST scopes ``GET /v2/access-token`` reports for ``token``."""
        self.access_tokens.scopes[token] = tuple(scopes)

    def set_rate_limits(
        self, *, organization: int | None = 200, per_token: int | None = 50
    ) -> None:
        """Enforce Buildkite's per-minute budgets (none are enforced until this is called)."""
        self.rate_limits.set(organization=organization, per_token=per_token)

    def add_pipeline(
        self, slug: str, *, name: str | None = None, repository: str = DEFAULT_REPOSITORY
    ) -> None:
        self.world.add_pipeline(slug, name, repository)

    def create_build(
        self,
        pipeline: str,
        *,
        commit: str,
        branch: str,
        jobs: Sequence[JobSpec],
        message: str = "",
        pull_request: Mapping[str, str] | None = None,
        state: str | None = None,
        env: Mapping[str, str] | None = None,
        source: str = "webhook",
        created_at: float | None = None,
    ) -> dict[str, Any]:
        """A build with these first job attempts; its state follows the jobs unless given.
        ``env`` and ``source`` as Buildkite shows them (a scheduled nightly: ``schedule``,
        ``{"TORCH_NIGHTLY": "1"}``); ``created_at`` (epoch seconds) to date it, e.g. before
        a label went on its PR (its jobs are stamped then too)."""
        build = self.world.create_build(
            pipeline,
            commit=commit,
            branch=branch,
            jobs=jobs,
            message=message,
            pull_request=pull_request,
            state=state,
            env=env,
            source=source,
            created_at=created_at,
        )
        return self.json.build(build, jobs=build.jobs)

    def plan_builds(self, pipeline: str, jobs: Sequence[JobSpec]) -> None:
        """What a build made through the create-build call runs in ``pipeline`` (until
        planned, one passing job): jobs in a final state finish it at once."""
        self.world.pipeline(pipeline)
        self._planned[pipeline] = list(jobs)

    def planned_jobs(self, pipeline: str) -> list[JobSpec]:
        return list(self._planned.get(pipeline, DEFAULT_PLANNED_JOBS))

    async def finish_build(self, pipeline: str, number: int) -> None:
        """Send the webhooks of a finished build (``job.finished`` per job, then
        ``build.finished``) and wait until they are delivered."""
        build = self.world.build(pipeline, number)
        if build.finished_at is None:
            raise ValueError(
                BUILD_NOT_FINISHED.format(slug=pipeline, number=number, state=build.state)
            )
        for job in build.latest_jobs():
            self.emit_job("job.finished", job)
        self.emit_build("build.finished", build)
        await self.flush()

    def set_retry_outcome(
        self,
        job_id_or_step_key: str,
        *,
        state: str,
        exit_status: int | None = 0,
        log: bytes | str = b"",
        after: Literal["immediately", "on_demand"] = "immediately",
    ) -> None:
        """What the job a retry creates does: finish at once, or when ``complete_job``."""
        outcome = as_outcome(state, exit_status, log, after)
        self.world.set_outcome(job_id_or_step_key, outcome)

    async def complete_job(self, job_id: str) -> None:
        """Run an ``on_demand`` retried job to its outcome; wait for its webhooks."""
        self._complete(self.world.job(job_id))
        await self.flush()

    async def emit(self, event: str, pipeline: str, number: int, job_id: str | None = None) -> None:
        """Send any event (e.g. ``build.started``) about a build or one of its jobs."""
        if job_id is not None:
            self.emit_job(event, self.world.job(job_id))
        else:
            self.emit_build(event, self.world.build(pipeline, number))
        await self.flush()

    def build(self, pipeline: str, number: int) -> dict[str, Any]:
        """The build with every job attempt (retried ones included)."""
        found = self.world.build(pipeline, number)
        return self.json.build(found, jobs=found.jobs)

    def job(self, job_id: str) -> dict[str, Any]:
        found = self.world.job(job_id)
        return self.json.job(self.world.build_of(found), found)

    # -- used by the route modules ----------------------------------------------------------

    def find_build(self, request: web.Request) -> Build:
        try:
            number = int(request.match_info["number"])
            return self.world.build(request.match_info["pipeline"], number)
        except (KeyError, ValueError) as exc:
            raise not_found() from exc

    def find_job(self, request: web.Request, build: Build | None) -> Job:
        job = self.world.jobs.get(request.match_info["job"])
        if job is None or (build is not None and job.build_id != build.id):
            raise not_found()
        return job

    def retried(self, new_job: Job, transition: Transition) -> None:
        """After a retry: the build may have changed state; an immediate outcome runs now."""
        self._announce(transition)
        outcome = self.world.pending.get(new_job.id)
        if outcome is not None and outcome.after == "immediately":
            self._complete(new_job)

    def _complete(self, job: Job) -> None:
        transition = self.world.complete(job)
        self.emit_job("job.finished", job)
        self._announce(transition)

    def _announce(self, transition: Transition) -> None:
        if transition.finished:
            self.emit_build("build.finished", transition.build)

    def artifact_link(self, artifact: Artifact) -> str:
        """A signed-looking, unauthenticated URL, like the S3 one Buildkite redirects to."""
        signature = hmac.new(self._signing_key, artifact.id.encode(), hashlib.sha256).hexdigest()
        return f"{self.store_url}{STORE_PATH}/{artifact.id}?signature={signature}"

    def artifact_signature_ok(self, artifact: Artifact, signature: str) -> bool:
        expected = hmac.new(self._signing_key, artifact.id.encode(), hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, signature)

    # -- webhooks ---------------------------------------------------------------------------

    def _payload(self, event: str, build: Build) -> dict[str, Any]:
        return {
            "event": event,
            "build": self.json.build(build, jobs=None),
            "pipeline": self.json.pipeline(build.pipeline),
            "sender": {"id": SANDBOX_USER["id"], "name": SANDBOX_USER["name"]},
        }

    def emit_build(self, event: str, build: Build) -> None:
        self.webhooks.enqueue(event, self._payload(event, build))

    def emit_job(self, event: str, job: Job) -> None:
        build = self.world.build_of(job)
        payload = self._payload(event, build)
        payload["job"] = self.json.job(build, job)
        self.webhooks.enqueue(event, payload)

    # -- the HTTP pipeline ------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.monotonic()
        if self.on_request is not None:
            # A test's hook: something else happens while Buildkite is being asked.
            await self.on_request(request.method, request.path)
        body: object | None = None
        raw = await request.read()
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode(errors="replace")
        try:
            response = await self._serve(request, handler)
        except ApiError as error:
            response = json_response({"message": error.message}, error.status)
        except web.HTTPException as error:
            response = json_response({"message": error.reason}, error.status)
        except Exception as error:  # a stand-in bug: fail the test loudly, keep serving
            log.exception("buildkite sandbox failed on %s %s", request.method, request.path)
            self.errors.append(
                SANDBOX_BUG.format(method=request.method, path=request.path, error=error)
            )
            response = json_response({"message": f"sandbox error: {error}"}, 500)
        query: dict[str, str | list[str]] = {}
        for key in request.query:
            found = request.query.getall(key)
            query[key] = found if len(found) > 1 else found[0]
        name = request.match_info.route.name
        route = name.removesuffix(SLASH_SUFFIX) if name else None
        self.requests.append(
            RecordedRequest(
                request.method,
                request.path,
                query,
                route,
                response.status,
                started,
                time.monotonic(),
                body,
            )
        )
        return response

    async def _serve(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX + "/"):
            return await handler(request)  # the artifact store: signed URLs, no token
        if self.faults.latency:
            await asyncio.sleep(self.faults.latency)
        token = self._token(request)
        if request.match_info.get("org", self.organization) != self.organization:
            raise not_found()
        fault = self.faults.take(request.path, request.method)
        if fault is not None and fault.ghost:
            await handler(request)  # carried out; the answer is lost
            if fault.crash and self.faults.on_crash is not None:
                self.faults.on_crash()
        if fault is not None and fault.status != 429:
            return json_response({"message": fault_message(fault.status)}, fault.status)
        if fault is not None or not self.rate_limits.admit(token):
            reset_in = None if fault is None else fault.reset
            headers = self.rate_limits.headers(
                token, exhausted=fault is not None, reset_in=reset_in
            )
            reset = max(int(v) for k, v in headers.items() if k.endswith("-Reset"))
            return json_response({"message": RATE_LIMIT_MESSAGE, "reset": reset}, 429, headers)
        response = await handler(request)
        response.headers.update(self.rate_limits.headers(token))
        return response

    def _token(self, request: web.Request) -> str:
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        token = credential.strip()
        if scheme.lower() != "bearer" or token not in self.api_tokens:
            raise ApiError(401, AUTH_REQUIRED)
        return token
