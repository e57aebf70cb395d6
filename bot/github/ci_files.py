"""What the routing model reads, from GitHub: the generator's files at one commit.

One recursive tree read names every file and its blob (the config's ``job_dirs`` say
which are job files, as the generator reads them); a blob is content-addressed,
so its text is kept in the scope's shared cache: checking a PR reads the two trees
(base and head) and only the blobs no recent check has read — after the first PR,
usually just the ones the PR changed.
"""

from __future__ import annotations

import base64
from collections.abc import MutableMapping
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.github.changes import Repo
from bot.routing.read import job_dirs_of, job_paths

CACHE_KIND = "routing-blob"


async def read_inputs(
    gh: GitHubAPI,
    repo: Repo,
    commit: str,
    ci_config: str,
    cache: MutableMapping[Any, Any],
) -> dict[str, str]:
    """``{path: text}`` of what the generator reads at ``commit``: ``ci_config`` and every
    job file under the ``job_dirs`` it names (UTF-8 text only: the model reports a file
    it cannot read as missing)."""
    tree = await gh.getitem(
        "/repos/{owner}/{repo}/git/trees/{sha}{?recursive}",
        url_vars=repo.vars(sha=commit, recursive="1"),
    )
    blobs = {
        str(entry.get("path")): str(entry.get("sha"))
        for entry in tree.get("tree") or []
        if entry.get("type") == "blob"
    }
    files: dict[str, str] = {}
    config = await _text(gh, repo, blobs.get(ci_config), cache)
    if config is None:
        return files
    files[ci_config] = config
    for path in job_paths(blobs, job_dirs_of(config)):
        text = await _text(gh, repo, blobs[path], cache)
        if text is not None:
            files[path] = text
    return files


async def _text(
    gh: GitHubAPI, repo: Repo, sha: str | None, cache: MutableMapping[Any, Any]
) -> str | None:
    if sha is None:
        return None
    key = (CACHE_KIND, repo.full_name, sha)
    if key not in cache:
        cache[key] = await _read_blob(gh, repo, sha)
    text = cache[key]
    return text if isinstance(text, str) else None


async def _read_blob(gh: GitHubAPI, repo: Repo, sha: str) -> str | None:
    blob = await gh.getitem("/repos/{owner}/{repo}/git/blobs/{sha}", url_vars=repo.vars(sha=sha))
    try:
        return base64.b64decode(blob["content"]).decode("utf-8")
    except UnicodeDecodeError:
        return None
