"""The GitHub App manifest in deploy/ asks for every event the bot's routers handle and
the permissions its writes need, so an App made from it misses nothing."""

from __future__ import annotations

import json
from pathlib import Path

from bot.service.app import DEFAULT_ROUTERS
from bot.service.sources import RECONCILE_EVENT, SYNC_EVENT

MANIFEST = Path(__file__).parents[2] / "deploy" / "github-app-manifest.json"
BUILDKITE_PREFIX = "buildkite:"  # Buildkite's events, routed beside GitHub's


def handled_events() -> set[str]:
    events: set[str] = set()
    for router in DEFAULT_ROUTERS:
        events |= set(router._shallow_routes) | set(router._deep_routes)
    internal = {RECONCILE_EVENT, SYNC_EVENT}
    return {e for e in events if e not in internal and not e.startswith(BUILDKITE_PREFIX)}


def test_every_handled_github_event_is_subscribed() -> None:
    manifest = json.loads(MANIFEST.read_text())
    assert handled_events() == set(manifest["default_events"])


def test_the_permissions_the_writes_need() -> None:
    permissions = json.loads(MANIFEST.read_text())["default_permissions"]
    assert permissions["checks"] == "write"  # the CI routing check run
    assert permissions["contents"] == permissions["pull_requests"] == "write"
    assert permissions["issues"] == "write"
