"""One list of what the App needs (bot.core.app_requirements): the routers handle no
event it leaves out, the manifest in deploy/ is `followup-bot app-manifest`'s output and a
valid GitHub App manifest, and the README lists exactly the same permissions and events."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from bot.cli.app_manifest import app_manifest_command
from bot.cli.main import main
from bot.core.app_requirements import (
    BUILDKITE_SCOPES,
    DEFAULT_APP_NAME,
    DEFAULT_HOMEPAGE,
    DEFAULT_WEBHOOK_URL,
    EVENTS,
    PERMISSIONS,
    covers,
    manifest,
    manifest_json,
    readme_markdown,
)
from bot.core.sources import INTERNAL_PREFIX
from bot.service.app import DEFAULT_ROUTERS

ROOT = Path(__file__).parents[2]
MANIFEST = ROOT / "deploy" / "github-app-manifest.json"
SCHEMA = Path(__file__).parent / "data" / "github-app-manifest.schema.json"
README = ROOT / "README.md"
BUILDKITE_PREFIX = "buildkite:"  # Buildkite's events, routed beside GitHub's
README_START = "   <!-- app-requirements:start -->\n"
README_END = "   <!-- app-requirements:end -->"


def handled_events() -> set[str]:
    events: set[str] = set()
    for router in DEFAULT_ROUTERS:
        events |= set(router._shallow_routes) | set(router._deep_routes)
    # The bot's own deliveries (ticks, syncs, per-PR follow-ups) need nothing of GitHub.
    outside = (INTERNAL_PREFIX, BUILDKITE_PREFIX)
    return {e for e in events if not e.startswith(outside)}


def validate(document: object) -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(document)


def test_every_handled_github_event_is_required() -> None:
    assert handled_events() == {event.name for event in EVENTS}


def test_the_permissions_the_writes_need() -> None:
    permissions = {p.name: p.access for p in PERMISSIONS}
    assert permissions["checks"] == "write"  # the CI routing check run
    assert permissions["contents"] == permissions["pull_requests"] == "write"
    assert permissions["issues"] == "write"


def test_deploy_manifest_is_the_commands_output() -> None:
    out = io.StringIO()
    app_manifest_command(
        name=DEFAULT_APP_NAME,
        homepage=DEFAULT_HOMEPAGE,
        webhook_url=DEFAULT_WEBHOOK_URL,
        redirect_url=None,
        out=out,
    )
    assert MANIFEST.read_text() == out.getvalue() == manifest_json()


def test_the_manifest_is_a_valid_github_app_manifest() -> None:
    validate(json.loads(MANIFEST.read_text()))
    document = manifest(
        name="followup-bot-staging",
        homepage="https://example.org/bot",
        webhook_url="https://bot.example.org/webhooks/github",
        redirect_url="https://example.org/created",
    )
    validate(document)
    assert document["hook_attributes"]["url"] == "https://bot.example.org/webhooks/github"
    assert document["default_permissions"] == {p.name: p.access for p in PERMISSIONS}
    assert document["default_events"] == [e.name for e in EVENTS]


def test_the_schema_refuses_what_github_would() -> None:
    bad = manifest()
    bad["default_permissions"] = {"contents": "everything"}
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


def test_app_manifest_command_options(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["app-manifest", "--name", "bot-x", "--webhook-url", "https://h.example/wh"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert document["name"] == "bot-x"
    assert document["hook_attributes"]["url"] == "https://h.example/wh"
    assert document["redirect_url"] == document["url"]


def test_the_readme_lists_exactly_the_required_permissions_and_events() -> None:
    text = README.read_text()
    start = text.index(README_START) + len(README_START)
    end = text.index(README_END)
    assert text[start:end] == readme_markdown()


def test_the_readme_names_every_buildkite_scope() -> None:
    text = README.read_text()
    for scope in BUILDKITE_SCOPES:
        assert f"`{scope.name}`" in text


def test_access_levels() -> None:
    for granted, needed in (("write", "read"), ("admin", "write"), ("read", "read")):
        assert covers(granted, needed)
    for refused, wanted in (("read", "write"), (None, "read"), ("none", "read")):
        assert not covers(refused, wanted)
