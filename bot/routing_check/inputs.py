"""What the routing model reads, from GitHub: the generator's files at one commit.

One recursive tree read names every file and its blob; a blob is content-addressed,
so its text is kept in the scope's shared cache: checking a PR reads the two trees
(base and head) and only the blobs no recent check has read — after the first PR,
usually just the ones the PR changed.
"""

from __future__ import annotations

import base64
from collections.abc import MutableMapping, Sequence
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.github.changes import Repo
from bot.landing.rules import path_matches

CACHE_KIND = "routing-blob"


async def read_inputs(
    gh: GitHubAPI,
    repo: Repo,
    commit: str,
    globs: Sequence[str],
    cache: MutableMapping[Any, Any],
) -> dict[str, str]:
    """``{path: text}`` of the files at ``commit`` that ``globs`` name (UTF-8 text only:
    the model reports a file it cannot read as missing)."""
    tree = await gh.getitem(
        "/repos/{owner}/{repo}/git/trees/{sha}{?recursive}",
        url_vars=repo.vars(sha=commit, recursive="1"),
    )
    files: dict[str, str] = {}
    for entry in tree.get("tree") or []:
        path, sha = str(entry.get("path")), str(entry.get("sha"))
        if entry.get("type") != "blob" or not any(path_matches(path, g) for g in globs):
            continue
        key = (CACHE_KIND, repo.full_name, sha)
        if key not in cache:
            cache[key] = await _read_blob(gh, repo, sha)
        text = cache[key]
        if isinstance(text, str):
            files[path] = text
    return files


async def _read_blob(gh: GitHubAPI, repo: Repo, sha: str) -> str | None:
    blob = await gh.getitem("/repos/{owner}/{repo}/git/blobs/{sha}", url_vars=repo.vars(sha=sha))
    try:
        return base64.b64decode(blob["content"]).decode("utf-8")
    except UnicodeDecodeError:
        return None
