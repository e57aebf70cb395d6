"""Writing the dashboard issue: compared with its live body, edited only when it differs.

Each refresh reads the issue as GitHub returns it (a conditional GET: an unchanged issue
costs a 304 and no rate limit) and edits it only when its body is not the one the bot
would write. So an idle tick writes nothing, and a hand edit is undone at the next tick.

The issue is written only by the deployment that owns it (``bot.dashboard.ownership``):
one whose database names another deployment, or whose store has no record of an issue
written before ids existed, leaves it alone, says so once in the log, and ``doctor``
reports it with the fix. FOLLOWUP_BOT_ADOPT_DASHBOARD, set to the id of the deployment
that wrote it, makes this one take it over (a deliberate move to a new database).

A dashboard closed by a human stays closed: its body is still kept current (an edit
notifies nobody), it is never reopened and never replaced by a second issue; reopening
it brings it back to the issue list. (Renovate recreates its Dependency Dashboard
instead, which fights the human who closed it.) Callers serialise ``upsert_dashboard``
per repository, like every other flow.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import time
from typing import Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.dashboard.deployment import Deployment, this_deployment
from bot.dashboard.ownership import (
    Verdict,
    adoption_value,
    same_body,
    stamp,
    verdict,
    writer_shown,
    written_by,
)
from bot.dashboard.text import DASHBOARD_TITLE, MARKER
from bot.github.changes import Repo
from bot.github.issues import find_issue
from bot.store.kinds import Kind
from bot.store.protocol import Store

log = logging.getLogger(__name__)

GONE = (404, 410)  # the remembered issue was deleted or transferred away
ADOPT_SETTING = "FOLLOWUP_BOT_ADOPT_DASHBOARD"

LOG_CREATED = "%s: dashboard issue #%d created"
LOG_UPDATED = "%s: dashboard issue #%d updated"
LOG_RESTORED = "%s: dashboard issue #%d had been edited by hand; restored"
LOG_ADOPTED = "%s: dashboard issue #%d taken over from deployment %s (%s)"
LOG_GONE = "%s: dashboard issue #%d is gone (%d); looking for another"
LOG_FOREIGN = (
    "%s: dashboard issue #%d was written by another deployment (%s), not by this one (%s): "
    "left alone. If this deployment replaces that one (a move to a new database), set "
    "%s=%s; otherwise this one is a second deployment by mistake (followup-bot doctor "
    "says the same)"
)


class Upsert(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    FOREIGN = "left alone: another deployment's"


async def upsert_dashboard(
    gh: GitHubAPI,
    store: Store,
    repo: Repo,
    body: str,
    *,
    bot_login: str,
    adopt: str | None = None,
    now: float | None = None,
) -> Upsert:
    """Create the repo's dashboard issue, or edit it where its live body differs from
    ``body`` (stamped with this deployment's id); ``adopt``: FOLLOWUP_BOT_ADOPT_DASHBOARD."""
    deployment = await this_deployment(store, now=time.time() if now is None else now)
    wanted = stamp(body, deployment.current)
    record = await store.get_state(Kind.DASHBOARD, repo.full_name) or {}
    number = record.get("issue")
    if isinstance(number, int) and not isinstance(number, bool):
        live = await _get(gh, repo, number)
        if live is not None:
            return await _settle(gh, store, repo, live, wanted, deployment, record, adopt)
    found = await find_issue(gh, repo, MARKER, bot_login=bot_login)
    if found is None:
        created = await gh.post(
            "/repos/{owner}/{repo}/issues",
            url_vars=repo.vars(),
            data={"title": DASHBOARD_TITLE, "body": wanted},
        )
        number = int(created["number"])
        await _remember(store, repo, record, number, wanted)
        log.info(LOG_CREATED, repo.full_name, number)
        return Upsert.CREATED
    return await _settle(gh, store, repo, found, wanted, deployment, record, adopt)


async def _get(gh: GitHubAPI, repo: Repo, number: int) -> dict[str, Any] | None:
    """The remembered issue as GitHub has it now (None: it is gone)."""
    try:
        issue: dict[str, Any] = await gh.getitem(
            "/repos/{owner}/{repo}/issues/{number}", url_vars=repo.vars(number=str(number))
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) not in GONE:
            raise
        log.warning(LOG_GONE, repo.full_name, number, int(exc.status_code))
        return None
    return issue


async def _settle(
    gh: GitHubAPI,
    store: Store,
    repo: Repo,
    issue: dict[str, Any],
    wanted: str,
    deployment: Deployment,
    record: dict[str, Any],
    adopt: str | None,
) -> Upsert:
    number = int(issue["number"])
    live = str(issue.get("body") or "")
    recorded = record.get("issue") == number
    found = verdict(live, ours=deployment.ids, recorded=recorded, adopt=adopt)
    if found is Verdict.FOREIGN:
        await _refuse(store, repo, record, number, written_by(live), deployment.current)
        return Upsert.FOREIGN
    outcome = Upsert.UNCHANGED
    if not same_body(live, wanted):
        await _edit(gh, repo, number, wanted)
        outcome = Upsert.UPDATED
        if found is Verdict.ADOPT:
            log.warning(LOG_ADOPTED, repo.full_name, number, writer_shown(written_by(live)), adopt)
        elif recorded and record.get("hash") == _digest(wanted):
            log.warning(LOG_RESTORED, repo.full_name, number)  # it was this text, and is not
        else:
            log.info(LOG_UPDATED, repo.full_name, number)
    await _remember(store, repo, record, number, wanted)
    return outcome


async def _refuse(
    store: Store,
    repo: Repo,
    record: dict[str, Any],
    number: int,
    writer: str | None,
    current: str,
) -> None:
    """Remember (and log, once) that another deployment's dashboard was left alone."""
    refused = {"issue": number, "writer": writer}
    if record.get("refused") == refused:
        return
    log.warning(
        LOG_FOREIGN,
        repo.full_name,
        number,
        writer_shown(writer),
        current,
        ADOPT_SETTING,
        adoption_value(writer),
    )
    await store.put_state(Kind.DASHBOARD, repo.full_name, {**record, "refused": refused})


async def _edit(gh: GitHubAPI, repo: Repo, number: int, body: str) -> None:
    # Only the body: the state is left alone, so a dashboard a human closed stays closed.
    await gh.patch(
        "/repos/{owner}/{repo}/issues/{number}",
        url_vars=repo.vars(number=str(number)),
        data={"body": body},
    )


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


async def _remember(
    store: Store, repo: Repo, record: dict[str, Any], number: int, body: str
) -> None:
    """The issue this deployment writes and the body it last wrote (a release before this
    one reads the same record); written only when it changed, so an idle tick writes
    nothing to the database either."""
    wanted = {"issue": number, "hash": _digest(body)}
    if record != wanted:
        await store.put_state(Kind.DASHBOARD, repo.full_name, wanted)
