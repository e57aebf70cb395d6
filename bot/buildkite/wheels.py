"""Downloading the wheel of a main-branch commit for the bot's own audit.

Wheels are a few hundred MB: the download is streamed to a temporary file
(never held in memory), refused as soon as it passes the configured cap, and
kept under the commit's name so a second audit of the same commit downloads
nothing. Only the newest few are kept on disk.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import aiohttp

from bot.core.blocking import BlockingRunner
from bot.core.errors import PermanentError, TransientError

log = logging.getLogger(__name__)

CHUNK = 1 << 20
KEEP = 2  # wheels kept in the cache: the one being audited and the previous one

ERROR_TOO_LARGE = "wheel at {url} is larger than the {limit} MB cap (allowlist.wheel_max_mb)"
ERROR_NOT_FOUND = "no wheel at {url} (HTTP {status}); it may not be published yet"
ERROR_HTTP = "downloading {url} failed: HTTP {status}"


def wheel_url(template: str, commit: str) -> str:
    return template.replace("{commit}", commit)


def cached_path(cache_dir: Path, url: str) -> Path:
    digest = hashlib.sha256(url.encode()).hexdigest()[:24]
    return cache_dir / f"{digest}.whl"


async def fetch_wheel(
    session: aiohttp.ClientSession,
    blocking: BlockingRunner,
    url: str,
    *,
    cache_dir: Path,
    max_bytes: int,
) -> Path:
    """The wheel at ``url`` on local disk, downloading it unless it is cached."""
    target = cached_path(cache_dir, url)
    if await blocking.run(target.exists):
        return target
    await blocking.run(cache_dir.mkdir, parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    async with session.get(url) as response:
        if response.status == 404:
            raise PermanentError(ERROR_NOT_FOUND.format(url=url, status=response.status))
        if response.status >= 500:
            raise TransientError(ERROR_HTTP.format(url=url, status=response.status))
        if response.status != 200:
            raise PermanentError(ERROR_HTTP.format(url=url, status=response.status))
        too_large = PermanentError(ERROR_TOO_LARGE.format(url=url, limit=max_bytes >> 20))
        if (response.content_length or 0) > max_bytes:
            raise too_large
        size = 0
        handle = await blocking.run(partial.open, "wb")
        try:
            async for chunk in response.content.iter_chunked(CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise too_large
                await blocking.run(handle.write, chunk)
        except BaseException:
            await blocking.run(handle.close)
            await blocking.run(partial.unlink, missing_ok=True)
            raise
        await blocking.run(handle.close)
    await blocking.run(partial.replace, target)
    await blocking.run(_evict, cache_dir, target)
    log.info("downloaded %s (%d MB)", url, size >> 20)
    return target


def _evict(cache_dir: Path, keep: Path) -> None:
    wheels = sorted(cache_dir.glob("*.whl"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in wheels[KEEP:]:
        if old != keep:
            old.unlink(missing_ok=True)
