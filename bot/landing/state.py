"""What the bot remembers about landing one PR, and the small reads every landing step shares."""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.context.scope import RepoScope
from bot.core.outcome import Outcome
from bot.github import changes
from bot.github.bot_branches import proposal_key
from bot.github.changes import Repo
from bot.store.kinds import Kind, pin_key, pr_key
from bot.store.protocol import Store
from bot.store.state_doc import StateDoc

log = logging.getLogger(__name__)


PASSED, FAILED, BLOCKED = "passed", "failed", "blocked"
SUCCESS = "success"


class LandingOutcome(enum.StrEnum):
    """What one call into the landing flow did (the log line's first words)."""

    NOT_OPEN = "the PR is not open"
    CLOSED = "the PR is closed"
    NOT_APPROVED = "not approved for landing"
    REFUSED = "approval refused"
    LEFT_TO_HUMANS = "landing of this head was left to humans"
    ALREADY_MERGED = "already merged"
    AUTO_MERGE = "auto-merge enabled; GitHub merges when the required checks pass"
    WAITING = "waiting"
    NOT_MERGEABLE_YET = "not mergeable yet (405); waiting for the next status"
    WAITING_FULL_CI = "waiting for the full CI"
    MERGE_RACES_LOST = "merge refused while the base kept moving: left to humans"
    MERGED = "merged"
    APPROVAL_STANDS = "approval still stands"
    CHANGES_REQUESTED = "changes requested: landing stopped"
    DISMISSED = "approval dismissed: landing stopped"
    NOT_THE_APPROVAL = "not the approval being landed on"
    REAPPROVAL_REQUESTED = "approval void: re-approval requested"
    NOTHING_TO_DO = "nothing to do"
    HANDLED_ALREADY = "this failure was handled already"
    RETRIED = "retried flaky jobs"
    STOPPED = "landing stopped: left to humans"


Landing = Outcome[LandingOutcome]


@dataclass(frozen=True)
class Approval:
    number: int
    review_id: int
    login: str
    commit_id: str | None


@dataclass
class LandingState(StateDoc):
    """What the bot remembers about landing one PR (a store document)."""

    pin: str | None = None
    approved_head: str | None = None
    approved_by: str | None = None
    review_id: int | None = None
    auto_merge_for: str | None = None  # the head auto-merge was enabled for
    failed_runs: dict[str, int] = field(default_factory=dict)  # head → failed CI runs
    seen_failures: list[str] = field(default_factory=list)  # build failures already acted on
    handling: dict[str, int] = field(default_factory=dict)  # a failure being acted on → its run
    stopped_for: str | None = None  # a real failure left this head to humans
    reapproval_for: str | None = None  # the head the "re-approval needed" comment is about
    merged_sha: str | None = None
    # Just before the bot put the labels on approval on the PR: GitHub's timeline has whole
    # seconds only, and a build created earlier within the label's second is no full build.
    labels_added_at: float | None = None
    # The head landing waits for a full build of (a reconcile tick looks at it again).
    awaiting_full_build: str | None = None
    started_builds: dict[str, int] = field(default_factory=dict)  # "pipeline@head" → build
    merge_races: dict[str, int] = field(default_factory=dict)  # head → merges lost to races


def state_key(repo: Repo, number: int) -> str:
    return pr_key(repo, number)


def pr_lock(repo: Repo, number: int) -> str:
    """The same lock retry-flaky holds, so the two never act on one PR at once."""
    return f"{repo.full_name}#pr{number}"


def is_bot_bump(pull: Mapping[str, Any], bot_login: str) -> bool:
    """A PR the bot generated: a proposal branch (a bump, a migration), opened by the bot."""
    head_ref = str((pull.get("head") or {}).get("ref") or "")
    author = str((pull.get("user") or {}).get("login") or "")
    return proposal_key(head_ref) is not None and author == bot_login


async def load_state(ctx: RepoScope, number: int) -> LandingState:
    return LandingState.load(await ctx.store.get_state(Kind.LANDING, state_key(ctx.repo, number)))


async def save_state(ctx: RepoScope, number: int, state: LandingState) -> None:
    await ctx.store.put_state(Kind.LANDING, state_key(ctx.repo, number), state.dump())


async def read_pull(ctx: RepoScope, number: int) -> dict[str, Any]:
    pull: dict[str, Any] = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}", url_vars=ctx.repo.vars(number=str(number))
    )
    return pull


async def record_landed(store: Store, repo: Repo, pin: str | None, number: int, now: float) -> None:
    """Start the pin's cooldown (once per PR: a redelivery does not extend it)."""
    if pin is None:
        return
    key = pin_key(repo.full_name, pin)
    doc = dict(await store.get_state(Kind.PIN_COOLDOWN, key) or {})
    if doc.get("pr") == number:
        return
    doc.update(landed_at=now, pr=number)
    await store.put_state(Kind.PIN_COOLDOWN, key, doc)


async def open_bump_pull(
    gh: GitHubAPI, repo: Repo, branch: str, bot_login: str
) -> dict[str, Any] | None:
    """The bot's open bump PR on ``branch``, if any."""
    for pull in await changes.pulls_for_branch(gh, repo, branch):
        if pull["state"] == "open" and is_bot_bump(pull, bot_login):
            return pull
    return None
