"""A finished job's log tail, cleaned, read once per process for every reader.

A failed main job is read by the image check (its ``job.finished``: does it say a
manifest is unknown?) and by the red-on-main judgement (its ``build.finished``: what is
its failure signature?); a finished job's log never changes, so the second reader
takes the first one's copy from the services' short-lived cache.
"""

from __future__ import annotations

from bot.abi.log import clean_log
from bot.context.scope import RepoScope

LOG_TAIL_BYTES = 65536
CACHE_KIND = "job-log-lines"


async def job_log_lines(
    ctx: RepoScope, org: str, pipeline: str, number: int, job_id: str
) -> list[str]:
    key = (CACHE_KIND, job_id)
    found = ctx.cache.get(key)
    if not isinstance(found, list):
        tail = await ctx.buildkite.job_log_tail(
            org, pipeline, number, job_id, max_bytes=LOG_TAIL_BYTES
        )
        found = clean_log(tail)
        ctx.cache[key] = found
    return list(found)
