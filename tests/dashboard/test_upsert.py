"""upsert_dashboard against the GitHub stand-in, with the bot's own client: the live body
compared, hand edits restored, another deployment's dashboard left alone or adopted."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import gidgethub
import pytest
from gidgethub.abc import GitHubAPI

from bot.core.blocking import BlockingRunner
from bot.dashboard.deployment import this_deployment
from bot.dashboard.flow import (
    DASHBOARD_TITLE,
    MARKER,
    DashboardData,
    Upsert,
    render,
    upsert_dashboard,
)
from bot.dashboard.issue import ADOPT_SETTING, LOG_FOREIGN, LOG_RESTORED
from bot.dashboard.ownership import UNMARKED, stamp, written_by
from bot.github.changes import Repo
from bot.github.client import GitHubApp
from bot.store.kinds import Kind
from bot.store.sqlite import SQLiteStore
from sandbox.github_pipeline import RecordedRequest
from sandbox.github_state import Issue
from sandbox.harness import Harness, app_key, harness

REPO = Repo("acme", "widgets")
INSTALLATION_ID = 41
HUMAN = "octocat"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Harness]:
    # The bot is not started: its handlers would react to the stand-in's webhooks
    # and make requests of their own, and these tests count requests.
    async with harness(tmp_path, repositories=(REPO.full_name,), start=False) as h:
        h.sandbox.create_repo(
            REPO.full_name, files={"README.md": "# widgets\n"}, installation_id=INSTALLATION_ID
        )
        yield h


@pytest.fixture
async def gh(env: Harness) -> AsyncIterator[GitHubAPI]:
    """The bot's client (installation token, retries, timeouts), as its handlers get it."""
    async with aiohttp.ClientSession() as session:
        app = GitHubApp(
            session,
            app_id=env.settings.app_id,
            private_key=app_key()[0],
            base_url=env.sandbox.base_url,
        )
        client = await app.repo_client(REPO.full_name)
        await client.getitem("/rate_limit")  # fetch the installation token up front
        env.sandbox.reset_log()  # the token exchange is not the dashboard's doing
        yield client


@pytest.fixture
def bot_login(env: Harness) -> str:
    return env.sandbox.bot_user.login


async def fresh_store(blocking: BlockingRunner) -> SQLiteStore:
    store = SQLiteStore(":memory:", blocking)
    await store.open()
    return store


def body(text: str) -> str:
    """A real rendered body, varied by the handle it names."""
    return render(DashboardData(repo=REPO.full_name), handle=text)


def issues(env: Harness) -> list[Issue]:
    repo = env.sandbox.repo(REPO.full_name)
    return [i for i in repo.issues.values() if i.pull is None]


def writes(env: Harness) -> list[RecordedRequest]:
    return [r for r in env.sandbox.requests if r.method != "GET"]


async def deployment_of(store: SQLiteStore) -> str:
    return (await this_deployment(store, now=0.0)).current


def bot_issue(env: Harness, number: int, text: str) -> Issue:
    """An issue the bot opened, put straight into the stand-in (an earlier deployment's,
    or an earlier release's)."""
    issue = Issue(number, number, DASHBOARD_TITLE, text, env.sandbox.bot_user, "open", 0.0, 0.0)
    env.sandbox.repo(REPO.full_name).issues[number] = issue
    return issue


async def test_created_once_then_unchanged_without_any_write(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    first = body("bot")
    assert await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login) == Upsert.CREATED
    [issue] = issues(env)
    mine = await deployment_of(store)
    assert (issue.title, issue.body, issue.user.login, issue.state) == (
        DASHBOARD_TITLE,
        stamp(first, mine),
        bot_login,
        "open",
    )
    assert written_by(issue.body or "") == mine
    assert [r.operation_id for r in writes(env)] == ["issues/create"]
    assert await store.get_state(Kind.DASHBOARD, REPO.full_name) is not None

    env.sandbox.reset_log()
    assert await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login) == "unchanged"
    # One look at the live issue, nothing written.
    assert [r.operation_id for r in env.sandbox.requests] == ["issues/get"]
    assert len(issues(env)) == 1
    assert env.sandbox.violations == []


async def test_a_changed_body_is_one_patch(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
    env.sandbox.reset_log()
    second = body("ci-bot")
    assert await upsert_dashboard(gh, store, REPO, second, bot_login=bot_login) == "updated"
    [request] = writes(env)
    [issue] = issues(env)
    assert (request.method, request.operation_id) == ("PATCH", "issues/update")
    assert request.body == {"body": stamp(second, await deployment_of(store))}
    assert issue.body == request.body["body"]

    env.sandbox.reset_log()
    assert await upsert_dashboard(gh, store, REPO, second, bot_login=bot_login) == "unchanged"
    assert writes(env) == []
    assert env.sandbox.violations == []


async def test_a_hand_edit_is_restored_at_the_next_refresh(
    env: Harness,
    gh: GitHubAPI,
    store: SQLiteStore,
    bot_login: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = body("bot")
    await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login)
    [issue] = issues(env)
    written = issue.body
    issue.body = "Cleaned up by hand."

    env.sandbox.reset_log()
    with caplog.at_level(logging.INFO, logger="bot.dashboard.issue"):
        assert await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login) == "updated"
    assert issue.body == written
    assert [r.operation_id for r in writes(env)] == ["issues/update"]
    assert LOG_RESTORED % (REPO.full_name, issue.number) in caplog.messages


async def test_a_body_github_hands_back_with_crlf_is_not_rewritten(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    first = body("bot")
    await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login)
    [issue] = issues(env)
    issue.body = (issue.body or "").replace("\n", "\r\n").rstrip()
    env.sandbox.reset_log()
    assert await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login) == "unchanged"
    assert writes(env) == []


async def test_an_empty_store_leaves_another_deployments_dashboard_alone(
    env: Harness,
    gh: GitHubAPI,
    store: SQLiteStore,
    blocking: BlockingRunner,
    bot_login: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    production = body("bot")
    await upsert_dashboard(gh, store, REPO, production, bot_login=bot_login)
    [dashboard] = issues(env)
    shown = dashboard.body
    # Issues that must not be taken for it: a human's with the marker pasted in,
    # and the bot's own issue without it.
    repo = env.sandbox.repo(REPO.full_name)
    decoy_user = env.sandbox.user(HUMAN)
    for number, (user, text) in enumerate(
        [(decoy_user, f"copied {MARKER}"), (env.sandbox.bot_user, "no marker")], start=100
    ):
        repo.issues[number] = Issue(number, number, "x", text, user, "open", 0.0, 0.0)

    second = await fresh_store(blocking)  # a second deployment, its own empty database
    try:
        env.sandbox.reset_log()
        with caplog.at_level(logging.WARNING, logger="bot.dashboard.issue"):
            for _ in range(3):
                outcome = await upsert_dashboard(gh, second, REPO, body("x"), bot_login=bot_login)
                assert outcome == Upsert.FOREIGN
        assert writes(env) == []
        listing = env.sandbox.requests[0]
        assert listing.operation_id == "issues/list-for-repo"
        assert listing.query["creator"] == bot_login
        production_id = await deployment_of(store)
        [line] = [m for m in caplog.messages if "another deployment" in m]  # logged once
        assert line == LOG_FOREIGN % (
            REPO.full_name,
            dashboard.number,
            production_id,
            await deployment_of(second),
            ADOPT_SETTING,
            production_id,
        )
    finally:
        await second.close()
    assert dashboard.body == shown
    assert env.sandbox.violations == []


async def test_a_move_to_a_new_database_adopts_the_dashboard_when_told(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, blocking: BlockingRunner, bot_login: str
) -> None:
    await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
    [dashboard] = issues(env)
    old_id = await deployment_of(store)
    moved = await fresh_store(blocking)
    try:
        outcome = await upsert_dashboard(
            gh, moved, REPO, body("ci-bot"), bot_login=bot_login, adopt=old_id
        )
        assert outcome == Upsert.UPDATED
        new_id = await deployment_of(moved)
        assert dashboard.body == stamp(body("ci-bot"), new_id)
        # Remembered: the next identical body writes nothing, the setting or not.
        env.sandbox.reset_log()
        again = await upsert_dashboard(gh, moved, REPO, body("ci-bot"), bot_login=bot_login)
        assert again == Upsert.UNCHANGED
        assert writes(env) == []
        # The old database, were it still running, now leaves the dashboard alone.
        left = await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
        assert left == Upsert.FOREIGN
        assert dashboard.body == stamp(body("ci-bot"), new_id)
    finally:
        await moved.close()
    assert len(issues(env)) == 1


async def test_an_upgraded_deployment_takes_over_the_dashboard_its_store_records(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, blocking: BlockingRunner, bot_login: str
) -> None:
    # The previous release wrote the issue (no deployment id in it) and recorded it.
    legacy_body = body("bot")
    dashboard = bot_issue(env, 3, legacy_body)
    legacy_hash = hashlib.sha256(legacy_body.encode()).hexdigest()
    await store.put_state(Kind.DASHBOARD, REPO.full_name, {"issue": 3, "hash": legacy_hash})
    # A second deployment with an empty store, started before the upgrade: not its own.
    other = await fresh_store(blocking)
    try:
        assert await upsert_dashboard(gh, other, REPO, body("x"), bot_login=bot_login) == (
            Upsert.FOREIGN
        )
        assert dashboard.body == legacy_body

        outcome = await upsert_dashboard(gh, store, REPO, legacy_body, bot_login=bot_login)
        assert outcome == Upsert.UPDATED
        assert written_by(dashboard.body or "") == await deployment_of(store)
        # From now on the id says whose it is, and the other still leaves it alone.
        assert await upsert_dashboard(gh, other, REPO, body("x"), bot_login=bot_login) == (
            Upsert.FOREIGN
        )
        # An unmarked dashboard can be adopted on purpose, too.
        dashboard.body = legacy_body
        await store.delete_state(Kind.DASHBOARD, REPO.full_name)
        adopted = await upsert_dashboard(
            gh, other, REPO, body("x"), bot_login=bot_login, adopt=UNMARKED
        )
        assert adopted == Upsert.UPDATED
        assert written_by(dashboard.body or "") == await deployment_of(other)
    finally:
        await other.close()


async def test_ids_two_replicas_made_at_once_are_both_this_deployments(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    await store.put_state(Kind.DEPLOYMENT, "b" * 32, {"created_at": 5.0})
    await store.put_state(Kind.DEPLOYMENT, "a" * 32, {"created_at": 5.0})
    assert await deployment_of(store) == "a" * 32  # the oldest, then the smallest
    dashboard = bot_issue(env, 4, stamp(body("bot"), "b" * 32))
    assert await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login) == (
        Upsert.UPDATED
    )
    assert written_by(dashboard.body or "") == "a" * 32


async def test_a_dashboard_closed_by_a_human_stays_closed_and_current(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, blocking: BlockingRunner, bot_login: str
) -> None:
    await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
    [dashboard] = issues(env)
    dashboard.state = "closed"

    assert await upsert_dashboard(gh, store, REPO, body("b2"), bot_login=bot_login) == "updated"
    mine = await deployment_of(store)
    assert (dashboard.state, dashboard.body) == ("closed", stamp(body("b2"), mine))

    moved = await fresh_store(blocking)
    try:
        outcome = await upsert_dashboard(
            gh, moved, REPO, body("b3"), bot_login=bot_login, adopt=mine
        )
        new_id = await deployment_of(moved)
    finally:
        await moved.close()
    assert outcome == Upsert.UPDATED
    assert [(i.number, i.state, i.body) for i in issues(env)] == [
        (dashboard.number, "closed", stamp(body("b3"), new_id))
    ]


async def test_a_deleted_issue_is_replaced(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
    [old] = issues(env)
    del env.sandbox.repo(REPO.full_name).issues[old.number]

    assert await upsert_dashboard(gh, store, REPO, body("b2"), bot_login=bot_login) == "created"
    [new] = issues(env)
    assert new.number != old.number
    assert (await store.get_state(Kind.DASHBOARD, REPO.full_name) or {})["issue"] == new.number
    env.sandbox.reset_log()
    assert await upsert_dashboard(gh, store, REPO, body("b2"), bot_login=bot_login) == "unchanged"
    assert writes(env) == []


async def test_other_errors_propagate_and_the_old_body_stays_remembered(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
    remembered = await store.get_state(Kind.DASHBOARD, REPO.full_name)
    env.sandbox.faults.fail_next(1, status=422, operation="issues/update")
    with pytest.raises(gidgethub.BadRequest):
        await upsert_dashboard(gh, store, REPO, body("b2"), bot_login=bot_login)
    assert await store.get_state(Kind.DASHBOARD, REPO.full_name) == remembered
    assert len(issues(env)) == 1
    # The next attempt edits it (the failed one wrote nothing).
    assert await upsert_dashboard(gh, store, REPO, body("b2"), bot_login=bot_login) == "updated"


async def test_of_two_dashboards_the_oldest_is_kept(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    # A crash between creating the issue and recording it, twice: both carry this
    # deployment's id, and the store records neither.
    mine = await deployment_of(store)
    for number in (7, 5):
        bot_issue(env, number, stamp(body("old"), mine))
    repo = env.sandbox.repo(REPO.full_name)
    assert await upsert_dashboard(gh, store, REPO, body("new"), bot_login=bot_login) == "updated"
    assert (repo.issues[5].body, repo.issues[7].body) == (
        stamp(body("new"), mine),
        stamp(body("old"), mine),
    )
    assert (await store.get_state(Kind.DASHBOARD, REPO.full_name) or {})["issue"] == 5
