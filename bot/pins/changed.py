"""Which pins a push to the downstream default branch may have moved: those whose CMake
file or companion files it touched, or all of them when it touched the config or when
the push does not say what it touched.

A push webhook lists at most 2,048 commits (the Events API lists 20; the webhook is what
the bot gets), each with the files it added, modified and removed; a forced push or a
longer one is not fully described, so every pin is looked at. Before this, every push to
main re-synced every pin (3 reads per pin).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.config.models import PinConfig
from bot.config.parse import CONFIG_PATH

PUSH_COMMITS_CAP = 2048  # GitHub's cap on the commits a push webhook lists
SELECT_ALL: Mapping[str, Any] = {"all": True}
_FILE_LISTS = ("added", "modified", "removed")


def changed_files(payload: Mapping[str, Any]) -> frozenset[str] | None:
    """Every path the push's commits touched; None when the payload cannot say."""
    commits = payload.get("commits")
    if payload.get("forced") is True or not isinstance(commits, list):
        return None
    if not commits or len(commits) >= PUSH_COMMITS_CAP:
        return None  # an empty list is a new branch or a tag; 2,048 may be a cut list
    found: set[str] = set()
    for commit in commits:
        if not isinstance(commit, Mapping):
            return None
        for name in _FILE_LISTS:
            paths = commit.get(name)
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                return None
            found.update(paths)
    return frozenset(found)


def main_push_selection(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The sync selection of a push to the default branch."""
    files = changed_files(payload)
    if files is None or CONFIG_PATH in files:
        return SELECT_ALL
    return {"files": sorted(files)}


def touches(pin: PinConfig, files: frozenset[str]) -> bool:
    """Whether the pin's file or one of its companion files is among ``files``."""
    return pin.file in files or any(companion.file in files for companion in pin.also)
