"""What the routing model reads, from GitHub: the generator's files at one commit.

One recursive tree read names every file and its blob; a blob is content-addressed,
so each is read once per process and kept (bounded): checking a PR reads the two
trees (base and head) and only the blobs no earlier check has read — after the first
PR, usually just the ones the PR changed.
"""

from __future__ import annotations

import base64
from collections import OrderedDict
from collections.abc import Sequence

from gidgethub.abc import GitHubAPI

from bot.github.changes import Repo
from bot.landing.rules import path_matches

MAX_KEPT_BLOBS = 2048  # vLLM's generator inputs are ~30 files; many PRs' worth


class BlobCache:
    """Blob texts by sha, oldest dropped first."""

    def __init__(self, limit: int = MAX_KEPT_BLOBS) -> None:
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._limit = limit

    def get(self, sha: str) -> str | None:
        text = self._texts.get(sha)
        if text is not None:
            self._texts.move_to_end(sha)
        return text

    def put(self, sha: str, text: str) -> None:
        self._texts[sha] = text
        if len(self._texts) > self._limit:
            self._texts.popitem(last=False)


async def read_inputs(
    gh: GitHubAPI, repo: Repo, commit: str, globs: Sequence[str], blobs: BlobCache
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
        text = blobs.get(sha)
        if text is None:
            text = await _read_blob(gh, repo, sha)
            if text is None:
                continue
            blobs.put(sha, text)
        files[path] = text
    return files


async def _read_blob(gh: GitHubAPI, repo: Repo, sha: str) -> str | None:
    blob = await gh.getitem("/repos/{owner}/{repo}/git/blobs/{sha}", url_vars=repo.vars(sha=sha))
    try:
        return base64.b64decode(blob["content"]).decode("utf-8")
    except UnicodeDecodeError:
        return None
