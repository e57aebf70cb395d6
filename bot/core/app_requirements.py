"""What the bot's features need from GitHub and Buildkite: the one list.

The App manifest (``followup-bot app-manifest``, kept in deploy/), the README's
list of permissions and events, and ``followup-bot doctor`` all read this, so an
App set up from any of them is the App the code needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# GitHub's access levels, weakest first: a grant covers every level before it.
ACCESS_LEVELS = ("read", "write", "admin")
ACCESS_WORDS = {"read": "read", "write": "read and write", "admin": "admin"}

DEFAULT_APP_NAME = "followup-bot"
DEFAULT_HOMEPAGE = "https://github.com/vllm-project"
DEFAULT_WEBHOOK_URL = "https://followup-bot.example.org/webhooks/github"


@dataclass(frozen=True)
class Permission:
    name: str  # the manifest's key, e.g. "pull_requests"
    title: str  # as GitHub's settings page shows it
    access: str  # one of ACCESS_LEVELS
    why: str


@dataclass(frozen=True)
class Event:
    name: str
    why: str


@dataclass(frozen=True)
class BuildkiteScope:
    name: str
    why: str


PERMISSIONS: tuple[Permission, ...] = (
    Permission(
        "contents",
        "Contents",
        "write",
        "blobs, trees, commits, the bump branch, merging",
    ),
    Permission(
        "pull_requests",
        "Pull requests",
        "write",
        "open, update, close, auto-merge bump PRs",
    ),
    Permission(
        "issues",
        "Issues",
        "write",
        "comments, labels, reactions, the dashboard and red-on-main issues",
    ),
    Permission("statuses", "Commit statuses", "read", "landing waits for green statuses"),
    Permission("checks", "Checks", "write", 'the "CI routing" check run; landing reads runs'),
    Permission("metadata", "Metadata", "read", "collaborator permissions for the commands"),
)

EVENTS: tuple[Event, ...] = (
    Event("check_run", "landing"),
    Event("create", "pins that follow release tags"),
    Event("issue_comment", "commands"),
    Event("pull_request", "landing, the CI routing check"),
    Event("pull_request_review", "landing"),
    Event("push", "pins"),
    Event("release", "pins that follow release tags"),
    Event("status", "landing"),
)

BUILDKITE_SCOPES: tuple[BuildkiteScope, ...] = (
    BuildkiteScope("read_builds", "builds of a commit, their jobs"),
    BuildkiteScope("read_build_logs", "job logs: failure classes, audits, missing images"),
    BuildkiteScope("read_artifacts", "the torch ABI audit's report"),
    BuildkiteScope(
        "write_builds",
        "retry-flaky's, landing's and red-on-main's job retries, and the full builds "
        "landing starts (landing.start_full_build)",
    ),
)


def covers(granted: str | None, needed: str) -> bool:
    """Whether access ``granted`` (None: none) allows what ``needed`` asks."""
    if granted not in ACCESS_LEVELS:
        return False
    return ACCESS_LEVELS.index(granted) >= ACCESS_LEVELS.index(needed)


def manifest(
    *,
    name: str = DEFAULT_APP_NAME,
    homepage: str = DEFAULT_HOMEPAGE,
    webhook_url: str = DEFAULT_WEBHOOK_URL,
    redirect_url: str | None = None,
) -> dict[str, Any]:
    """GitHub's App manifest for an App with every permission and event above.

    ``redirect_url`` (default: ``homepage``) is where GitHub sends the code that
    ``POST /app-manifests/{code}/conversions`` turns into the App's id and key.
    """
    return {
        "name": name,
        "url": homepage,
        "hook_attributes": {"url": webhook_url, "active": True},
        "redirect_url": redirect_url or homepage,
        "public": False,
        "default_permissions": {p.name: p.access for p in PERMISSIONS},
        "default_events": [e.name for e in EVENTS],
    }


def manifest_json(**options: Any) -> str:
    """The manifest as deploy/github-app-manifest.json holds it."""
    return json.dumps(manifest(**options), indent=2) + "\n"


README_INDENT = "   "  # inside the README's numbered set-up list


def readme_markdown() -> str:
    """The README's list of the App's permissions and events."""
    permissions = ", ".join(f"{p.title} *{ACCESS_WORDS[p.access]}* ({p.why})" for p in PERMISSIONS)
    events = ", ".join(f"`{e.name}` ({e.why})" for e in EVENTS)
    lines = [
        f"- **Repository permissions**: {permissions}.",
        f"- **Events**: {events}.",
    ]
    return "\n".join(README_INDENT + line for line in lines) + "\n"
