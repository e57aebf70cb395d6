"""Malformed payloads: each handler fails with one clear ``PermanentError``, nothing else.

Every event a handler is registered for gets payloads with one field missing,
null, or of the wrong type; the handler must raise ``PermanentError`` with the
message of ``bot.core.payload`` naming that field (never an ``AttributeError``,
``KeyError`` or ``TypeError`` from deep inside). The well-formed payloads they
are made from run through without an error, so each failure is the field's.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from gidgethub import routing, sansio

import handlers.allowlist
import handlers.bump
import handlers.commands
import handlers.dashboard
import handlers.landing
import handlers.main_red
import handlers.routing
from bot.context.services import Services
from bot.core.errors import PermanentError
from bot.core.payload import ERROR_MISSING_FIELD, ERROR_WRONG_TYPE
from bot.service.app import DEFAULT_ROUTERS
from sandbox.harness import Harness

Handler = Callable[[sansio.Event, Services], Awaitable[None]]

UNSERVED = "someone/else"  # a repository the bot does not serve: valid payloads stop early
BUMP_BRANCH = "followup-bot/flash-attention"
OBJECT, ARRAY, STRING = "an object", "an array", "a string"
INTEGER, BOOLEAN = "an integer", "a boolean"

PULL = {"number": 5, "head": {"ref": BUMP_BRANCH}, "user": {"login": "bot"}, "merged": True}
PAYLOADS: dict[str, dict[str, Any]] = {
    "issue_comment": {
        "action": "created",
        "repository": {"full_name": UNSERVED},
        "comment": {
            "id": 1,
            "body": "@followup-bot help",
            "user": {"login": "alice"},
            "html_url": "https://github.com/someone/else/pull/2#issuecomment-1",
        },
        "issue": {
            "number": 2,
            "user": {"login": "bob"},
            "labels": [{"name": "ready"}],
            "pull_request": {"url": "https://api.github.com/repos/someone/else/pulls/2"},
        },
    },
    "retry-outcomes": {"repository": {"full_name": UNSERVED}, "pull_request": {"number": 5}},
    "landing": {
        "repository": {"full_name": UNSERVED},
        "pull_request": {"number": 5},
        "why": "build #7",
        "pipeline": "ci",
        "build": 7,
    },
    "pull_request_review": {
        "action": "submitted",
        "repository": {"full_name": UNSERVED},
        "pull_request": PULL,
        "review": {"id": 9, "state": "approved", "user": {"login": "carol"}, "commit_id": "abc"},
    },
    "pull_request": {
        "action": "synchronize",  # or closed: set per registration
        "repository": {"full_name": UNSERVED},
        "pull_request": PULL,
    },
    "pull_request.head": {
        "action": "opened",  # or synchronize, reopened: set per registration
        "repository": {"full_name": UNSERVED},
        "pull_request": {
            **PULL,
            "head": {"ref": "ci/migrate", "sha": "abc"},
            "base": {"ref": "main", "sha": "def"},
        },
    },
    "status": {
        "repository": {"full_name": UNSERVED},
        "state": "success",
        "sha": "abc",
        "branches": [{"name": BUMP_BRANCH}, {"name": "main"}],
    },
    "check_run": {
        "action": "completed",
        "repository": {"full_name": UNSERVED},
        "check_run": {
            "head_sha": "abc",
            "conclusion": "success",
            "check_suite": {"head_branch": BUMP_BRANCH},
        },
    },
    "pull_request_review.dismissed": {
        "action": "dismissed",
        "repository": {"full_name": UNSERVED},
        "pull_request": PULL,
        "review": {"id": 9, "state": "dismissed", "user": {"login": "carol"}},
        "sender": {"login": "dave"},
    },
    "build.finished": {
        "event": "build.finished",
        "build": {
            "url": "https://api.buildkite.com/v2/organizations/vllm/pipelines/ci/builds/7",
            "branch": BUMP_BRANCH,
            "number": 7,
        },
        "pipeline": {"slug": "ci", "repository": "https://github.com/someone/else.git"},
    },
    "job.finished": {"event": "job.finished", "job": {"id": "0190-job", "state": "passed"}},
    # A job.finished as Buildkite sends it: the job with its build and pipeline.
    "job.finished+build": {
        "event": "job.finished",
        "job": {"id": "0190-job", "state": "failed"},
        "build": {
            "url": "https://api.buildkite.com/v2/organizations/vllm/pipelines/ci/builds/7",
            "branch": "main",
            "number": 7,
        },
        "pipeline": {"slug": "ci", "repository": "https://github.com/someone/else.git"},
    },
    "reconcile": {"repository": {"full_name": UNSERVED}},
    # a tag push: read whole, then nothing to do
    "push": {
        "ref": "refs/tags/v1",
        "repository": {"full_name": UNSERVED, "default_branch": "main"},
        "sender": {"login": "alice"},
        "deleted": False,
    },
    "sync": {"repository": {"full_name": UNSERVED}, "select": {"pin": "flash-attention"}},
    # a new branch: read whole, then nothing to do
    "create": {"ref": "topic", "ref_type": "branch", "repository": {"full_name": UNSERVED}},
    "release": {"action": "published", "repository": {"full_name": UNSERVED}},
}


def missing(path: str) -> str:
    return ERROR_MISSING_FIELD.format(path=path)


def wrong(path: str, actual: str, kind: str) -> str:
    return ERROR_WRONG_TYPE.format(path=path, actual=actual, kind=kind)


class _Absent:
    """The field is removed (a stable name in test ids, unlike a bare object())."""

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()

# (what is changed: path -> new value or _ABSENT, the message expected)
Case = tuple[dict[str, Any], str]

REPOSITORY_CASES: list[Case] = [
    ({"repository": _ABSENT}, missing("repository.full_name")),
    ({"repository": "someone/else"}, wrong("repository", STRING, OBJECT)),
    ({"repository.full_name": None}, missing("repository.full_name")),
    ({"repository.full_name": 5}, wrong("repository.full_name", INTEGER, STRING)),
]
PULL_CASES: list[Case] = [
    ({"pull_request": None}, missing("pull_request")),
    ({"pull_request": _ABSENT}, missing("pull_request")),
    ({"pull_request": "5"}, wrong("pull_request", STRING, OBJECT)),
    ({"pull_request.number": "5"}, wrong("pull_request.number", STRING, INTEGER)),
    ({"pull_request.number": True}, wrong("pull_request.number", BOOLEAN, INTEGER)),
    ({"pull_request.head": None}, missing("pull_request.head.ref")),
    ({"pull_request.head": "x"}, wrong("pull_request.head", STRING, OBJECT)),
    ({"pull_request.head.ref": 1}, wrong("pull_request.head.ref", INTEGER, STRING)),
    ({"pull_request.user": "bot"}, wrong("pull_request.user", STRING, OBJECT)),
    ({"pull_request.user.login": None}, missing("pull_request.user.login")),
    ({"pull_request.merged": "yes"}, wrong("pull_request.merged", STRING, BOOLEAN)),
]
BUILD_CASES: list[Case] = [
    ({"build": "7"}, wrong("build", STRING, OBJECT)),
    ({"pipeline": "ci"}, wrong("pipeline", STRING, OBJECT)),
    ({"pipeline.repository": ["x"]}, wrong("pipeline.repository", ARRAY, STRING)),
    ({"pipeline.repository": _ABSENT}, missing("pipeline.repository")),
]

CASES: dict[Handler, tuple[str, list[Case]]] = {
    handlers.commands.on_comment: (
        "issue_comment",
        [
            *REPOSITORY_CASES,
            ({"comment": "hi"}, wrong("comment", STRING, OBJECT)),
            ({"comment": None}, missing("comment.id")),
            ({"comment.user": "alice"}, wrong("comment.user", STRING, OBJECT)),
            ({"comment.user": {}}, missing("comment.user.login")),
            ({"comment.user.login": 5}, wrong("comment.user.login", INTEGER, STRING)),
            ({"comment.id": "1"}, wrong("comment.id", STRING, INTEGER)),
            ({"comment.body": 5}, wrong("comment.body", INTEGER, STRING)),
            ({"comment.body": None}, missing("comment.body")),
            ({"comment.body": {"text": "x"}}, wrong("comment.body", OBJECT, STRING)),
            ({"comment.html_url": 5}, wrong("comment.html_url", INTEGER, STRING)),
            ({"issue": None}, missing("issue.number")),
            ({"issue": [1]}, wrong("issue", ARRAY, OBJECT)),
            ({"issue.number": 2.5}, wrong("issue.number", "a number", INTEGER)),
            ({"issue.pull_request": "2"}, wrong("issue.pull_request", STRING, OBJECT)),
            ({"issue.user": "bob"}, wrong("issue.user", STRING, OBJECT)),
            ({"issue.labels": "ready"}, wrong("issue.labels", STRING, ARRAY)),
            ({"issue.labels": ["ready"]}, wrong("issue.labels[0]", STRING, OBJECT)),
            ({"issue.labels": [{"name": 5}]}, wrong("issue.labels[0].name", INTEGER, STRING)),
            ({"issue.labels": [{}]}, missing("issue.labels[0].name")),
        ],
    ),
    handlers.commands.on_job_finished: (
        "job.finished",
        [
            ({"job": None}, missing("job.id")),
            ({"job": _ABSENT}, missing("job.id")),
            ({"job": "0190-job"}, wrong("job", STRING, OBJECT)),
            ({"job.id": 5}, wrong("job.id", INTEGER, STRING)),
            ({"job.state": ["passed"]}, wrong("job.state", ARRAY, STRING)),
        ],
    ),
    handlers.landing.on_review: (
        "pull_request_review",
        [
            *REPOSITORY_CASES,
            *PULL_CASES,
            ({"review": None}, missing("review.state")),
            ({"review": "approved"}, wrong("review", STRING, OBJECT)),
            ({"review.state": 1}, wrong("review.state", INTEGER, STRING)),
            ({"review.id": "9"}, wrong("review.id", STRING, INTEGER)),
            ({"review.id": _ABSENT}, missing("review.id")),
            ({"review.user": ["carol"]}, wrong("review.user", ARRAY, OBJECT)),
            ({"review.user.login": 3}, wrong("review.user.login", INTEGER, STRING)),
            ({"review.commit_id": 5}, wrong("review.commit_id", INTEGER, STRING)),
        ],
    ),
    handlers.landing.on_review_dismissed: (
        "pull_request_review.dismissed",
        [
            *REPOSITORY_CASES,
            *PULL_CASES,
            ({"review": None}, missing("review.id")),
            ({"review.id": "9"}, wrong("review.id", STRING, INTEGER)),
            ({"sender": "dave"}, wrong("sender", STRING, OBJECT)),
            ({"sender.login": 4}, wrong("sender.login", INTEGER, STRING)),
        ],
    ),
    handlers.landing.on_check_run: (
        "check_run",
        [
            *REPOSITORY_CASES,
            ({"check_run": None}, missing("check_run.head_sha")),
            ({"check_run": "x"}, wrong("check_run", STRING, OBJECT)),
            ({"check_run.conclusion": 1}, wrong("check_run.conclusion", INTEGER, STRING)),
            ({"check_run.head_sha": _ABSENT}, missing("check_run.head_sha")),
            ({"check_run.check_suite": "s"}, wrong("check_run.check_suite", STRING, OBJECT)),
            (
                {"check_run.check_suite.head_branch": 3},
                wrong("check_run.check_suite.head_branch", INTEGER, STRING),
            ),
        ],
    ),
    handlers.landing.on_new_head: ("pull_request", [*REPOSITORY_CASES, *PULL_CASES]),
    handlers.landing.on_closed: ("pull_request", [*REPOSITORY_CASES, *PULL_CASES]),
    handlers.landing.on_status: (
        "status",
        [
            *REPOSITORY_CASES,
            ({"state": _ABSENT}, missing("state")),
            ({"state": 1}, wrong("state", INTEGER, STRING)),
            ({"sha": None}, missing("sha")),
            ({"branches": "main"}, wrong("branches", STRING, ARRAY)),
            ({"branches": [1]}, wrong("branches[0]", INTEGER, OBJECT)),
            ({"branches": [{"name": "a"}, {}]}, missing("branches[1].name")),
            ({"branches": [{"name": None}]}, missing("branches[0].name")),
        ],
    ),
    handlers.landing.on_build_finished: (
        "build.finished",
        [
            *BUILD_CASES,
            ({"build": None}, missing("build.branch")),
            ({"build.branch": 1}, wrong("build.branch", INTEGER, STRING)),
            ({"build.number": "7"}, wrong("build.number", STRING, INTEGER)),
            ({"build.number": None}, missing("build.number")),
            ({"pipeline": None}, missing("pipeline.slug")),
            ({"pipeline.slug": _ABSENT}, missing("pipeline.slug")),
        ],
    ),
    handlers.allowlist.on_build_finished: (
        "build.finished",
        [
            *BUILD_CASES,
            ({"build": None}, missing("build.url")),
            ({"build.url": 7}, wrong("build.url", INTEGER, STRING)),
            ({"build.branch": None}, missing("build.branch")),
            ({"pipeline": None}, missing("pipeline.repository")),
        ],
    ),
    handlers.main_red.on_build_finished: (
        "build.finished",
        [
            *BUILD_CASES,
            ({"build": None}, missing("build.url")),
            ({"build.url": 7}, wrong("build.url", INTEGER, STRING)),
            ({"build.branch": None}, missing("build.branch")),
        ],
    ),
    handlers.main_red.on_nightly_finished: (
        "build.finished",
        [*BUILD_CASES, ({"build.url": None}, missing("build.url"))],
    ),
    handlers.main_red.on_job_finished: (
        "job.finished+build",
        [
            *BUILD_CASES,
            ({"build": None}, missing("build.url")),
            ({"job": "x"}, wrong("job", STRING, OBJECT)),
        ],
    ),
    handlers.allowlist.on_reconcile: ("reconcile", REPOSITORY_CASES),
    handlers.bump.on_reconcile: ("reconcile", REPOSITORY_CASES),
    handlers.landing.on_reconcile: ("reconcile", REPOSITORY_CASES),
    handlers.bump.on_push: (
        "push",
        [
            *REPOSITORY_CASES,
            ({"ref": _ABSENT}, missing("ref")),
            ({"ref": 5}, wrong("ref", INTEGER, STRING)),
            ({"deleted": "no"}, wrong("deleted", STRING, BOOLEAN)),
            ({"sender": "alice"}, wrong("sender", STRING, OBJECT)),
            ({"sender.login": 7}, wrong("sender.login", INTEGER, STRING)),
            ({"repository.default_branch": 1}, wrong("repository.default_branch", INTEGER, STRING)),
        ],
    ),
    handlers.bump.on_tag_created: (
        "create",
        [
            *REPOSITORY_CASES,
            ({"ref_type": _ABSENT}, missing("ref_type")),
            ({"ref_type": 1}, wrong("ref_type", INTEGER, STRING)),
        ],
    ),
    handlers.commands.on_retry_outcomes: (
        "retry-outcomes",
        [
            *REPOSITORY_CASES,
            ({"pull_request": None}, missing("pull_request.number")),
            ({"pull_request.number": "5"}, wrong("pull_request.number", STRING, INTEGER)),
        ],
    ),
    handlers.landing.on_follow_up: (
        "landing",
        [
            *REPOSITORY_CASES,
            ({"pull_request": None}, missing("pull_request.number")),
            ({"pull_request.number": "5"}, wrong("pull_request.number", STRING, INTEGER)),
            ({"why": _ABSENT}, missing("why")),
            ({"pipeline": 3}, wrong("pipeline", INTEGER, STRING)),
            ({"build": "7"}, wrong("build", STRING, INTEGER)),
        ],
    ),
    handlers.bump.on_release_published: ("release", REPOSITORY_CASES),
    handlers.bump.on_sync: (
        "sync",
        [
            *REPOSITORY_CASES,
            ({"select": _ABSENT}, missing("select")),
            ({"select": "all"}, wrong("select", STRING, OBJECT)),
            ({"select.pin": 3}, wrong("pin", INTEGER, STRING)),
        ],
    ),
    handlers.dashboard.on_reconcile: ("reconcile", REPOSITORY_CASES),
    handlers.routing.on_reconcile: ("reconcile", REPOSITORY_CASES),
    handlers.routing.on_pull_head: (
        "pull_request.head",
        [
            *REPOSITORY_CASES,
            ({"pull_request": None}, missing("pull_request.number")),
            ({"pull_request.number": "5"}, wrong("pull_request.number", STRING, INTEGER)),
            ({"pull_request.head.sha": _ABSENT}, missing("pull_request.head.sha")),
            ({"pull_request.head.ref": 1}, wrong("pull_request.head.ref", INTEGER, STRING)),
            ({"pull_request.base": "main"}, wrong("pull_request.base", STRING, OBJECT)),
        ],
    ),
}


def registrations() -> Iterator[tuple[Handler, str, dict[str, Any]]]:
    """(handler, event name, data detail such as ``{"action": "created"}``) for every
    registration in the app's routers (gidgethub has no public listing of them)."""
    for router in DEFAULT_ROUTERS:
        for event, callbacks in router._shallow_routes.items():
            for callback in callbacks:
                yield callback, event, {}
        for event, details in router._deep_routes.items():
            for key, by_value in details.items():
                for value, callbacks in by_value.items():
                    for callback in callbacks:
                        yield callback, event, {key: value}


def edited(payload: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(payload)
    for path, value in changes.items():
        *parents, last = path.split(".")
        target = result
        for part in parents:
            target = target[part]
        if value is _ABSENT:
            del target[last]
        else:
            target[last] = value
    return result


def name(handler: Handler) -> str:
    return f"{handler.__module__}.{handler.__qualname__}"


def params() -> Iterator[Any]:
    for handler, event, detail in registrations():
        if handler not in CASES:
            continue
        kind, cases = CASES[handler]
        for changes, message in cases:
            data = edited({**PAYLOADS[kind], **detail}, changes)
            shown = ",".join(f"{path}={value!r}" for path, value in changes.items())
            yield pytest.param(handler, event, data, message, id=f"{name(handler)}[{shown}]")


def valid_params() -> Iterator[Any]:
    for handler, event, detail in registrations():
        if handler in CASES:
            data = {**copy.deepcopy(PAYLOADS[CASES[handler][0]]), **detail}
            yield pytest.param(handler, event, data, id=name(handler))


def test_every_registered_handler_has_malformed_payload_cases() -> None:
    registered = {handler for handler, _, _ in registrations()}
    assert {name(handler) for handler in registered - set(CASES)} == set()
    assert set(CASES) <= registered


@pytest.mark.parametrize(("handler", "event", "data", "message"), list(params()))
async def test_a_malformed_payload_is_one_permanent_error(
    ci_env: Harness, handler: Handler, event: str, data: dict[str, Any], message: str
) -> None:
    await ci_env.start()
    delivery = sansio.Event(data, event=event, delivery_id="malformed-1")
    assert handler in routing.Router(*DEFAULT_ROUTERS).fetch(delivery)

    with pytest.raises(PermanentError) as raised:
        await handler(delivery, ci_env.running.services)

    assert str(raised.value) == message
    assert ci_env.sandbox.requests == []  # refused before it asked GitHub anything


@pytest.mark.parametrize(("handler", "event", "data"), list(valid_params()))
async def test_the_well_formed_payloads_pass(
    ci_env: Harness, handler: Handler, event: str, data: dict[str, Any]
) -> None:
    await ci_env.start()
    delivery = sansio.Event(data, event=event, delivery_id="well-formed-1")
    assert handler in routing.Router(*DEFAULT_ROUTERS).fetch(delivery)

    await handler(delivery, ci_env.running.services)  # a repository it does not serve: no-op

    assert ci_env.sandbox.requests == []


@pytest.mark.parametrize(
    ("kind", "changes"),
    [
        ("issue_comment", {"comment.user": None}),  # a deleted account's comment
        ("issue_comment", {"issue.user": None, "issue.labels": None}),
        ("issue_comment", {"issue.pull_request": _ABSENT, "comment.html_url": None}),
        ("pull_request_review", {"review.user": None, "review.commit_id": None}),
        ("pull_request_review", {"pull_request.user": None, "pull_request.merged": _ABSENT}),
        ("status", {"branches": []}),
        ("job.finished", {"job.state": None}),
    ],
)
async def test_fields_github_may_send_as_null_are_not_errors(
    ci_env: Harness, kind: str, changes: dict[str, Any]
) -> None:
    await ci_env.start()
    data = edited(PAYLOADS[kind], changes)
    for handler, event, detail in registrations():
        if handler in CASES and CASES[handler][0] == kind:
            delivery = sansio.Event({**data, **detail}, event=event, delivery_id="null-1")
            await handler(delivery, ci_env.running.services)
    assert ci_env.sandbox.requests == []
