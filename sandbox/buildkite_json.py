"""Buildkite REST v2 JSON shapes for the stand-in's state, with URLs on the stand-in itself."""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import posixpath
from datetime import UTC, datetime
from typing import Any

from sandbox.buildkite_model import (
    JOB_NOT_RUNNABLE_STATES,
    Annotation,
    Artifact,
    Build,
    Job,
    Pipeline,
)

JSON = dict[str, Any]

SANDBOX_USER: JSON = {
    "id": "0a2b4c6d-0000-4000-8000-000000000001",
    "graphql_id": "VXNlci0tLTBhMmI0YzZkLTAwMDAtNDAwMC04MDAwLTAwMDAwMDAwMDAwMQ==",
    "name": "Sandbox User",
    "email": "sandbox@example.com",
    "avatar_url": "https://www.gravatar.com/avatar/0",
    "created_at": "2020-01-01T00:00:00.000Z",
}
# The stand-in has one agent: every job that ran ran on it.
SANDBOX_AGENT_ID = "0a9e0000-0000-4000-8000-000000000001"


def iso(timestamp: float | None) -> str | None:
    """ISO 8601 in UTC with milliseconds and a ``Z``, as Buildkite writes times."""
    if timestamp is None:
        return None
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def graphql_id(kind: str, uuid: str) -> str:
    return base64.b64encode(f"{kind}---{uuid}".encode()).decode()


class BuildkiteJson:
    """Renders state as Buildkite's API does; ``api`` ends in ``/v2``."""

    def __init__(self, api: str, web: str, organization: str) -> None:
        self.api = api
        self.web = web
        self.org = organization

    def pipeline_url(self, pipeline: Pipeline) -> str:
        return f"{self.api}/organizations/{self.org}/pipelines/{pipeline.slug}"

    def build_url(self, build: Build) -> str:
        return f"{self.pipeline_url(build.pipeline)}/builds/{build.number}"

    def build_web_url(self, build: Build) -> str:
        return f"{self.web}/{self.org}/{build.pipeline.slug}/builds/{build.number}"

    def job_url(self, build: Build, job: Job) -> str:
        return f"{self.build_url(build)}/jobs/{job.id}"

    def pipeline(self, pipeline: Pipeline) -> JSON:
        url = self.pipeline_url(pipeline)
        return {
            "id": pipeline.id,
            "graphql_id": graphql_id("Pipeline", pipeline.id),
            "url": url,
            "web_url": f"{self.web}/{self.org}/{pipeline.slug}",
            "name": pipeline.name,
            "slug": pipeline.slug,
            "repository": pipeline.repository,
            "provider": {"id": "github", "settings": {}},
            "default_branch": "main",
            "builds_url": f"{url}/builds",
            "badge_url": f"{self.web}/badges/{pipeline.id}.svg",
            "created_at": iso(pipeline.created_at),
            "archived_at": None,
            "env": {},
        }

    def build(self, build: Build, *, jobs: list[Job] | None) -> JSON:
        """The build; ``jobs`` None leaves the key out (exclude_jobs, webhook payloads)."""
        rendered: JSON = {
            "id": build.id,
            "graphql_id": graphql_id("Build", build.id),
            "url": self.build_url(build),
            "web_url": self.build_web_url(build),
            "number": build.number,
            "state": build.state,
            "cancel_reason": None,
            "blocked": build.state == "blocked",
            "message": build.message,
            "commit": build.commit,
            "branch": build.branch,
            "tag": None,
            "source": build.source,
            "author": None,
            "creator": SANDBOX_USER,
            "env": dict(build.env),
            "created_at": iso(build.created_at),
            "scheduled_at": iso(build.created_at),
            "started_at": iso(build.started_at),
            "finished_at": iso(build.finished_at),
            "meta_data": {},
            "pull_request": dict(build.pull_request) if build.pull_request else None,
            "rebuilt_from": None,
            "pipeline": self.pipeline(build.pipeline),
        }
        if jobs is not None:
            rendered["jobs"] = [self.job(build, job) for job in jobs]
        return rendered

    def job(self, build: Build, job: Job) -> JSON:
        url = self.job_url(build, job)
        runnable = job.state not in JOB_NOT_RUNNABLE_STATES
        return {
            "id": job.id,
            "graphql_id": graphql_id("Job", job.id),
            "type": "script",
            "name": job.name,
            "step_key": job.step_key,
            "step": {"id": graphql_id("Step", job.step_key), "signature": None},
            "priority": {"number": 0},
            "agent_query_rules": ["queue=default"],
            "state": job.state,
            "build_url": self.build_url(build),
            "web_url": f"{self.build_web_url(build)}#{job.id}",
            "log_url": f"{url}/log",
            "raw_log_url": f"{url}/log.txt",
            "artifacts_url": f"{url}/artifacts",
            "command": f"./ci/{job.step_key}.sh",
            "soft_failed": job.soft_failed,
            "exit_status": job.exit_status,
            "signal": None,
            "signal_reason": job.signal_reason,
            "artifact_paths": "",
            # A job no agent started (broken, skipped, expired, canceled early) has none.
            "agent": self.agent(job) if job.started_at is not None else None,
            "created_at": iso(job.created_at),
            "scheduled_at": iso(job.created_at),
            "runnable_at": iso(job.created_at) if runnable else None,
            "started_at": iso(job.started_at),
            "finished_at": iso(job.finished_at),
            "expired_at": iso(job.finished_at) if job.state == "expired" else None,
            "retried": job.retried,
            "retried_in_job_id": job.retried_in_job_id,
            "retries_count": job.retries_count,
            "retry_type": job.retry_type,
            "retry_source": None,
            "parallel_group_index": job.parallel_group_index,
            "parallel_group_total": job.parallel_group_total,
            "matrix": None,
            "cluster_id": None,
            "cluster_url": None,
            "cluster_queue_id": None,
            "cluster_queue_url": None,
        }

    def agent(self, job: Job) -> JSON:
        agent_id = SANDBOX_AGENT_ID
        return {
            "id": agent_id,
            "graphql_id": graphql_id("Agent", agent_id),
            "url": f"{self.api}/organizations/{self.org}/agents/{agent_id}",
            "web_url": f"{self.web}/organizations/{self.org}/agents/{agent_id}",
            "name": "sandbox-agent-1",
            "connection_state": "connected",
            "hostname": "sandbox-agent",
            "ip_address": "127.0.0.1",
            "user_agent": "buildkite-agent/3.0.0 (linux; amd64)",
            "creator": None,
            "created_at": iso(job.created_at),
        }

    def artifact(self, build: Build, job: Job, artifact: Artifact) -> JSON:
        url = f"{self.job_url(build, job)}/artifacts/{artifact.id}"
        mime = mimetypes.guess_type(artifact.path)[0] or "application/octet-stream"
        return {
            "id": artifact.id,
            "job_id": job.id,
            "url": url,
            "download_url": f"{url}/download",
            "state": "finished",
            "path": artifact.path,
            "dirname": posixpath.dirname(artifact.path) or ".",
            "filename": posixpath.basename(artifact.path),
            "mime_type": mime,
            "file_size": len(artifact.data),
            "glob_path": artifact.path,
            "original_path": artifact.path,
            "sha1sum": hashlib.sha1(artifact.data).hexdigest(),
        }

    def annotation(self, annotation: Annotation) -> JSON:
        # Buildkite renders the Markdown body to HTML; the stand-in passes it through.
        return {
            "id": annotation.id,
            "context": annotation.context,
            "style": annotation.style,
            "body_html": annotation.body,
            "created_at": iso(annotation.created_at),
            "updated_at": iso(annotation.updated_at),
        }
