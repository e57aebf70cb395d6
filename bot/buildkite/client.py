"""Buildkite REST v2 access: a small async client on the app's one session.

`BuildkiteClient` holds the endpoints the bot uses: builds and their jobs, a new
build, a job's log tail, the job retry, and a build's artifacts. How a request is sent, retried
and read is ``bot.buildkite.transport``; the errors it raises are
``bot.buildkite.errors``.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from bot.buildkite.decisions import check, describe, without_query
from bot.buildkite.errors import BuildkiteError, JobNotRetryable
from bot.buildkite.transport import BuildkiteConnection, Transport, capped_reader, tail_reader
from bot.core.http_policy import ResponseObserver, header

MAX_REDIRECTS = 5
MAX_PER_PAGE = 100
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Statuses Buildkite uses to refuse a job retry (not failed, already retried).
_NOT_RETRYABLE = frozenset({400, 422})

TOO_MANY_REDIRECTS = "more than {limit} redirects"
REDIRECT_WITHOUT_LOCATION = "a redirect without a Location header"


@dataclass(frozen=True)
class PullRequestRef:
    """The PR a new build is for, as Buildkite's create-build call takes it; ``repository``
    only for a PR from a fork (its Git URL)."""

    number: int
    base_branch: str
    repository: str | None = None


def _build_path(org: str, pipeline: str, number: int) -> list[str | int]:
    return ["organizations", org, "pipelines", pipeline, "builds", number]


class BuildkiteClient:
    """Buildkite's REST API for one token; share one per app (``requests_made`` adds up)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        connection: BuildkiteConnection,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        observe: ResponseObserver | None = None,
    ) -> None:
        self._http = Transport(session, connection, clock=clock, sleep=sleep, observe=observe)

    @property
    def requests_made(self) -> int:
        """Requests sent with the token (retries included). Buildkite limits REST requests
        per organization (200 a minute), so the transport paces them to the
        connection's ``requests_per_minute`` (50 unless configured)."""
        return self._http.requests_made

    async def builds(
        self,
        org: str,
        pipeline: str,
        *,
        commit: str | None = None,
        branch: str | None = None,
        states: Sequence[str] = (),
        per_page: int = 30,
        max_pages: int = 1,
        exclude_jobs: bool = False,
        include_retried_jobs: bool = False,
    ) -> list[dict[str, Any]]:
        """A pipeline's builds, newest first, following ``Link: rel=next`` up to ``max_pages``."""
        check("per_page", per_page, 1, MAX_PER_PAGE)
        check("max_pages", max_pages, 1)
        query: list[tuple[str, str]] = []
        if commit is not None:
            query.append(("commit", commit))
        if branch is not None:
            query.append(("branch", branch))
        query.extend(("state[]", state) for state in states)
        if exclude_jobs:
            query.append(("exclude_jobs", "true"))
        if include_retried_jobs:
            query.append(("include_retried_jobs", "true"))
        query.append(("per_page", str(per_page)))
        url = self._http.url(["organizations", org, "pipelines", pipeline, "builds"], query)
        return await self._http.link_pages(url, max_pages=max_pages)

    async def build(
        self, org: str, pipeline: str, number: int, *, include_retried_jobs: bool = False
    ) -> dict[str, Any]:
        """One build with its jobs (only each step's latest attempt unless asked)."""
        query = [("include_retried_jobs", "true")] if include_retried_jobs else []
        url = self._http.url(_build_path(org, pipeline, number), query)
        return await self._http.json_object(url)

    async def create_build(
        self,
        org: str,
        pipeline: str,
        *,
        commit: str,
        branch: str,
        message: str,
        env: Mapping[str, str] | None = None,
        pull_request: PullRequestRef | None = None,
    ) -> dict[str, Any]:
        """Start a build of ``commit`` on ``branch`` (Buildkite's create-build call); the
        answer is the new build. Never retried automatically on 5xx: a lost answer does
        not prove no build was made, so the caller looks for it (by ``env``) first."""
        data: dict[str, Any] = {"commit": commit, "branch": branch, "message": message}
        if env:
            data["env"] = dict(env)
        if pull_request is not None:
            data["pull_request_id"] = pull_request.number
            data["pull_request_base_branch"] = pull_request.base_branch
            if pull_request.repository is not None:
                data["pull_request_repository"] = pull_request.repository
        path = ["organizations", org, "pipelines", pipeline, "builds"]
        return await self._http.json_object(
            self._http.url(path), method="POST", idempotent=False, data=data
        )

    async def jobs(
        self,
        org: str,
        pipeline: str,
        number: int,
        *,
        states: Sequence[str] = (),
        step_key: str | None = None,
    ) -> list[dict[str, Any]]:
        """Every job of a build (retried ones included), following the cursor to the end."""
        query = [("state[]", state) for state in states]
        if step_key is not None:
            query.append(("step_key", step_key))
        url = self._http.url([*_build_path(org, pipeline, number), "jobs"], query)
        return await self._http.cursor_pages(url)

    async def job_log_tail(
        self,
        org: str,
        pipeline: str,
        number: int,
        job_id: str,
        *,
        max_bytes: int = 65536,
    ) -> bytes:
        """The last ``max_bytes`` of a job's raw log, undecoded; ``b""`` for an empty log."""
        check("max_bytes", max_bytes, 1)
        path = [*_build_path(org, pipeline, number), "jobs", job_id, "log"]
        reply = await self._http.request(
            "GET",
            self._http.url(path),
            headers={"Accept": "text/plain", "Range": f"bytes=-{max_bytes}"},
            # 416: nothing to take a suffix of, i.e. the log is empty.
            accept=frozenset({416}),
            # A server ignoring Range answers 200 with the whole log: keep the end only.
            read=tail_reader(max_bytes),
            streaming=True,
        )
        return b"" if reply.status == 416 else reply.body

    async def retry_job(self, org: str, pipeline: str, number: int, job_id: str) -> dict[str, Any]:
        """Retry one job; the answer is the new job. Never retried automatically on 5xx.

        ``JobNotRetryable`` (with Buildkite's message) when the job was already
        retried once or is not failed, timed out or canceled.
        """
        path = [*_build_path(org, pipeline, number), "jobs", job_id, "retry"]
        url = self._http.url(path)
        try:
            return await self._http.json_object(url, method="PUT", idempotent=False)
        except BuildkiteError as exc:
            if exc.status in _NOT_RETRYABLE:
                request = describe("PUT", url)
                raise JobNotRetryable(exc.status, exc.message, request=request) from exc
            raise

    async def artifacts(self, org: str, pipeline: str, number: int) -> list[dict[str, Any]]:
        """Every artifact of a build (all pages)."""
        query = [("per_page", str(MAX_PER_PAGE))]
        url = self._http.url([*_build_path(org, pipeline, number), "artifacts"], query)
        return await self._http.link_pages(url, max_pages=None)

    async def download_artifact(self, url: str, *, max_bytes: int) -> bytes:
        """An artifact's content, following the redirect to its storage URL.

        ``ArtifactTooLarge`` as soon as it passes ``max_bytes``: the cap bounds
        memory, not just the result. Each hop is a request of its own, so the token
        goes to the API's origin only, never to the storage it redirects to.
        """
        check("max_bytes", max_bytes, 0)
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            reply = await self._http.request(
                "GET",
                current,
                accept=_REDIRECTS,
                read=capped_reader(without_query(url), max_bytes),
                streaming=True,
            )
            if reply.status not in _REDIRECTS:
                return reply.body
            location = header(reply.headers, "location")
            if not location:
                raise BuildkiteError(reply.status, REDIRECT_WITHOUT_LOCATION)
            current = urllib.parse.urljoin(current, location)
        raise BuildkiteError(302, TOO_MANY_REDIRECTS.format(limit=MAX_REDIRECTS))
