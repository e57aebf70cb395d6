"""upsert_dashboard against the GitHub stand-in, with the bot's own client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import gidgethub
import pytest
from gidgethub.abc import GitHubAPI

from bot.dashboard.flow import (
    DASHBOARD_TITLE,
    MARKER,
    DashboardData,
    Upsert,
    render,
    upsert_dashboard,
)
from bot.github.changes import Repo
from bot.github.client import GitHubApp
from bot.service.blocking import BlockingRunner
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


async def test_created_once_then_unchanged_without_any_request(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    first = body("bot")
    assert await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login) == Upsert.CREATED
    [issue] = issues(env)
    assert (issue.title, issue.body, issue.user.login, issue.state) == (
        DASHBOARD_TITLE,
        first,
        bot_login,
        "open",
    )
    assert [r.operation_id for r in writes(env)] == ["issues/create"]
    assert await store.get_state(Kind.DASHBOARD, REPO.full_name) is not None

    env.sandbox.reset_log()
    assert await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login) == "unchanged"
    assert env.sandbox.requests == []
    assert len(issues(env)) == 1
    assert env.sandbox.violations == []


async def test_a_changed_body_is_one_patch(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
    env.sandbox.reset_log()
    second = body("ci-bot")
    assert await upsert_dashboard(gh, store, REPO, second, bot_login=bot_login) == "updated"
    [request] = env.sandbox.requests
    [issue] = issues(env)
    assert (request.method, request.operation_id) == ("PATCH", "issues/update")
    assert request.body == {"body": second}
    assert issue.body == second

    env.sandbox.reset_log()
    assert await upsert_dashboard(gh, store, REPO, second, bot_login=bot_login) == "unchanged"
    assert env.sandbox.requests == []
    assert env.sandbox.violations == []


async def test_a_lost_store_finds_the_issue_by_its_marker(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, blocking: BlockingRunner, bot_login: str
) -> None:
    first = body("bot")
    await upsert_dashboard(gh, store, REPO, first, bot_login=bot_login)
    [dashboard] = issues(env)
    # Issues that must not be taken for it: a human's with the marker pasted in,
    # and the bot's own issue without it.
    repo = env.sandbox.repo(REPO.full_name)
    decoy_user = env.sandbox.user(HUMAN)
    for number, (user, text) in enumerate(
        [(decoy_user, f"copied {MARKER}"), (env.sandbox.bot_user, "no marker")], start=100
    ):
        repo.issues[number] = Issue(number, number, "x", text, user, "open", 0.0, 0.0)

    lost = await fresh_store(blocking)
    try:
        env.sandbox.reset_log()
        assert await upsert_dashboard(gh, lost, REPO, first, bot_login=bot_login) == "unchanged"
        assert writes(env) == []
        [listing] = env.sandbox.requests
        assert listing.operation_id == "issues/list-for-repo"
        assert listing.query["creator"] == bot_login

        second = body("ci-bot")
        env.sandbox.reset_log()
        assert await upsert_dashboard(gh, lost, REPO, second, bot_login=bot_login) == "updated"
        assert [r.path for r in writes(env)] == [
            f"/repos/{REPO.full_name}/issues/{dashboard.number}"
        ]
    finally:
        await lost.close()
    assert dashboard.body == second
    assert [
        i.number for i in issues(env) if i.user.login == bot_login and MARKER in (i.body or "")
    ] == [dashboard.number]
    assert env.sandbox.violations == []


async def test_a_lost_store_and_a_changed_body_patch_the_found_issue(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, blocking: BlockingRunner, bot_login: str
) -> None:
    await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
    lost = await fresh_store(blocking)
    try:
        env.sandbox.reset_log()
        outcome = await upsert_dashboard(gh, lost, REPO, body("ci-bot"), bot_login=bot_login)
        assert outcome == Upsert.UPDATED
        assert [r.operation_id for r in writes(env)] == ["issues/update"]
        # Remembered again: the next identical body costs nothing.
        env.sandbox.reset_log()
        again = await upsert_dashboard(gh, lost, REPO, body("ci-bot"), bot_login=bot_login)
        assert again == Upsert.UNCHANGED
        assert env.sandbox.requests == []
    finally:
        await lost.close()
    assert len(issues(env)) == 1


async def test_a_dashboard_closed_by_a_human_stays_closed_and_current(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, blocking: BlockingRunner, bot_login: str
) -> None:
    await upsert_dashboard(gh, store, REPO, body("bot"), bot_login=bot_login)
    [dashboard] = issues(env)
    dashboard.state = "closed"

    assert await upsert_dashboard(gh, store, REPO, body("b2"), bot_login=bot_login) == "updated"
    assert (dashboard.state, dashboard.body) == ("closed", body("b2"))

    lost = await fresh_store(blocking)
    try:
        outcome = await upsert_dashboard(gh, lost, REPO, body("b3"), bot_login=bot_login)
    finally:
        await lost.close()
    assert outcome == Upsert.UPDATED
    assert [(i.number, i.state, i.body) for i in issues(env)] == [
        (dashboard.number, "closed", body("b3"))
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
    assert env.sandbox.requests == []


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


async def test_of_two_dashboards_the_oldest_is_adopted(
    env: Harness, gh: GitHubAPI, store: SQLiteStore, bot_login: str
) -> None:
    # E.g. a crash between creating the issue and recording it, then a lost store.
    repo = env.sandbox.repo(REPO.full_name)
    for number in (7, 5):
        repo.issues[number] = Issue(
            number, number, DASHBOARD_TITLE, body("old"), env.sandbox.bot_user, "open", 0.0, 0.0
        )
    assert await upsert_dashboard(gh, store, REPO, body("new"), bot_login=bot_login) == "updated"
    assert (repo.issues[5].body, repo.issues[7].body) == (body("new"), body("old"))
    assert (await store.get_state(Kind.DASHBOARD, REPO.full_name) or {})["issue"] == 5
