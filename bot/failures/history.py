"""Main-branch history of each CI step, for telling flaky from broken.

One Buildkite call (finished main builds, with retried jobs) serves a whole
command and is cached for a few minutes; failure signatures of main jobs come
from their log tails, fetched only when a decision needs them, at most a few
per command, and cached for good (a finished job's log never changes).
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from bot.buildkite import job_states
from bot.buildkite.client import BuildkiteClient
from bot.failures.classify import MainRun
from bot.failures.signature import Signature, failure_signature

FINISHED_BUILD_STATES = ("passed", "failed")
HISTORY_TTL = 600.0
MAX_SIGNATURE_FETCHES = 3  # per command: keeps it inside Buildkite's per-token budget


def _when(stamp: object) -> float:
    if not isinstance(stamp, str) or not stamp:
        return 0.0
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclass
class History:
    """Finished main builds of one pipeline, newest first, and a signature resolver."""

    org: str
    pipeline: str
    builds: list[dict[str, Any]]
    bk: BuildkiteClient
    cache: MutableMapping[Any, Any]
    fetches_left: int = MAX_SIGNATURE_FETCHES

    def runs(self, step_key: str, *, since: float, shard: int | None = None) -> list[MainRun]:
        """The step's outcome in each main build (newest first), signatures not yet read.

        A ``parallelism: N`` step runs N jobs under one step key; ``shard`` (the PR job's
        ``parallel_group_index``) compares shard with shard: shard 1 failing and shard 2
        passing is no "passed on retry", only a retry of the same shard is.
        """
        runs = []
        for build in self.builds:
            if _when(build.get("finished_at")) < since:
                continue
            # Only attempts that ran to their end say anything about the step: one that
            # never ran (broken, skipped, canceled before it started, expired) neither
            # failed nor passed, and has no log whose signature could be compared; one
            # canceled while it ran did not fail, and its log stops at the cancel.
            attempts = [
                job
                for job in build.get("jobs") or []
                if job.get("step_key") == step_key
                and job.get("parallel_group_index") == shard
                and (job.get("state") == job_states.PASSED or job_states.ran_and_failed(job))
            ]
            if not attempts:
                continue
            attempts.sort(
                key=lambda job: (int(job.get("retries_count") or 0), str(job.get("created_at")))
            )
            first, last = attempts[0], attempts[-1]
            passed = last.get("state") == job_states.PASSED
            failed_first = job_states.ran_and_failed(first)
            runs.append(
                MainRun(
                    build_number=int(build["number"]),
                    build_url=str(build.get("web_url") or ""),
                    commit=str(build.get("commit") or ""),
                    finished_at=_when(build.get("finished_at")),
                    passed=passed,
                    signature=None,
                    passed_on_retry=failed_first and passed and len(attempts) > 1,
                )
            )
            # Remembered so a signature can be read later without another build listing.
            self.cache[("main-first-attempt", runs[-1].build_number, step_key, shard)] = first
        return runs

    async def with_signatures(
        self, step_key: str, runs: Sequence[MainRun], *, shard: int | None = None
    ) -> list[MainRun]:
        """``runs`` with the signatures a decision can use: the newest run if it failed,
        and the newest few that failed and then passed on retry."""
        wanted = set()
        if runs and not runs[0].passed:
            wanted.add(0)
        wanted.update([i for i, run in enumerate(runs) if run.passed_on_retry][:2])
        resolved = list(runs)
        for index in sorted(wanted):
            signature = await self._signature(runs[index].build_number, step_key, shard)
            resolved[index] = replace(runs[index], signature=signature)
        return resolved

    async def _signature(
        self, build_number: int, step_key: str, shard: int | None
    ) -> Signature | None:
        job = self.cache.get(("main-first-attempt", build_number, step_key, shard))
        if job is None:
            return None
        key = ("signature", str(job["id"]))
        if key in self.cache:
            cached: Signature = self.cache[key]
            return cached
        if self.fetches_left <= 0:
            return None
        self.fetches_left -= 1
        tail = await self.bk.job_log_tail(self.org, self.pipeline, build_number, str(job["id"]))
        signature = failure_signature(tail)
        self.cache[key] = signature
        return signature


async def main_history(
    bk: BuildkiteClient,
    cache: MutableMapping[Any, Any],
    org: str,
    pipeline: str,
    branch: str,
    *,
    builds: int,
    clock: Callable[[], float] = time.time,
) -> History:
    key = ("main-builds", org, pipeline, branch)
    found = cache.get(key)
    if found is None or clock() - found[0] > HISTORY_TTL:
        listed = await bk.builds(
            org,
            pipeline,
            branch=branch,
            states=FINISHED_BUILD_STATES,
            per_page=max(1, min(builds, 100)),
            include_retried_jobs=True,
        )
        found = (clock(), listed)
        cache[key] = found
    return History(org, pipeline, list(found[1]), bk, cache)
