"""Upstream's branch head read off a compare that names the branch, not a sha.

An upstream push makes every pin that follows the branch compare its pinned commit
with the new head. Asking GitHub for ``pinned...branch`` resolves the branch *now*
(so a push delivered late, after a forced push moved the branch back, cannot make
the bot bump to a commit the branch no longer has) and lists the commits in the same
answer: one request instead of a ref read and a compare. Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COMPARE_PATH = "/compare/"


def head_of(comparison: Mapping[str, Any]) -> str | None:
    """The head's sha from a ``base...head`` compare (None: the answer does not say,
    because the head is past the 250 commits a compare lists)."""
    status = comparison.get("status")
    if status == "identical":
        return _sha(comparison.get("base_commit"))
    if status == "behind":  # the head is an ancestor of the base: their merge base
        return _sha(comparison.get("merge_base_commit"))
    commits = comparison.get("commits") or []
    listed_all = len(commits) >= int(comparison.get("total_commits") or 0)
    if status in ("ahead", "diverged") and commits and listed_all:
        return _sha(commits[-1])
    return None


def pinned_to(comparison: Mapping[str, Any], base: str, head: str) -> dict[str, Any]:
    """The compare as if asked for ``base...head`` by sha: its web link, which a PR body
    keeps, must not follow the branch as it moves on."""
    web = str(comparison.get("html_url") or "")
    prefix, found, _names = web.rpartition(COMPARE_PATH)
    if not found:
        return dict(comparison)
    return {**comparison, "html_url": f"{prefix}{COMPARE_PATH}{base}...{head}"}


def _sha(commit: object) -> str | None:
    if isinstance(commit, Mapping) and isinstance(commit.get("sha"), str):
        return str(commit["sha"])
    return None
