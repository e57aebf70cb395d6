"""Where the tests find vLLM's real data (the pack beside the project, never copied into it).

``FOLLOWUP_BOT_REAL_DATA`` names the pack's folder; by default it is ``../shared/real-data``
from the project's root, where CI lays it. A user's clone may not have it: the tests that need
it are skipped, and the run says so in one line (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SETTING = "FOLLOWUP_BOT_REAL_DATA"
MSG_ABSENT = "vLLM's real-data pack is not at {path} (set {setting}): {count} {tests} skipped"
BUILDS = ("main", "pr", "nightly")
# The generator inputs of each recorded build, as `followup-bot routes` takes them
# (the pack's README): the PR build's branch is a contributor's, the PR number 12345.
BUILD_ENVS: dict[str, dict[str, str]] = {
    "main": {"BUILDKITE_BRANCH": "main", "RUN_ALL": "1"},
    "pr": {"BUILDKITE_BRANCH": "contributor:routing-check", "BUILDKITE_PULL_REQUEST": "12345"},
    "nightly": {"BUILDKITE_BRANCH": "main", "TORCH_NIGHTLY": "1"},
}


def pack_root() -> Path:
    return Path(os.environ.get(SETTING) or PROJECT.parent / "shared" / "real-data")


def routing_root() -> Path:
    return pack_root() / "routing"


def available() -> bool:
    return routing_root().is_dir()


needs_pack = pytest.mark.skipif(not available(), reason=f"no real-data pack ({SETTING})")


@dataclass(frozen=True)
class RealTree:
    """One vLLM commit of the pack: its `.buildkite` files and the generator's routes."""

    name: str
    folder: Path

    def files(self) -> dict[str, str]:
        """Every file of the tree by its path in vLLM (`.buildkite/...`)."""
        base = self.folder / "buildkite"
        return {
            f".buildkite/{path.relative_to(base).as_posix()}": path.read_text(encoding="utf-8")
            for path in sorted(base.rglob("*"))
            if path.is_file()
        }

    def generated(self, build: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(
            (self.folder / f"routes-{build}.json").read_text(encoding="utf-8")
        )
        return loaded

    def checkout(self, into: Path) -> Path:
        """A checkout `followup-bot routes --repo` reads: the files under `into/.buildkite`."""
        for path, text in self.files().items():
            target = into / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return into


def trees() -> list[RealTree]:
    if not available():
        return []
    return [RealTree(p.name, p) for p in sorted(routing_root().iterdir()) if p.is_dir()]


def tree_ids() -> Iterator[str]:
    return (tree.name for tree in trees())
