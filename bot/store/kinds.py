"""Every kind of state document the bot stores, in one registry.

A kind names a family of documents (``Store.get_state(kind, key)``); two features
sharing a kind by accident would read each other's documents, so every kind is a
member of one ``@unique`` enum, and each says what its keys are and whether
retention may forget it (``PRUNABLE``, with the reason). Keys are built by the
typed helpers below, so a PR number and a pin name can never share a key space.
"""

from __future__ import annotations

from enum import StrEnum, unique
from typing import Protocol


class _Repo(Protocol):
    @property
    def full_name(self) -> str: ...


@unique
class Kind(StrEnum):
    # -- live state: what the bot is doing now; never pruned ----------------------------
    BUMP = "bump"  # pin_key: a pin's bump PR, intent and failures
    CONFIG = "config"  # repo_key: the last config read (by blob sha) and its problems
    REPO = "repo"  # repo_key: facts about the repository (its default branch)
    PAUSE = "pause"  # pin_key: a paused pin (who, why, until)
    PIN_COOLDOWN = "pin-cooldown"  # pin_key: when a bump of the pin last landed
    LANDING = "landing"  # pr_key: landing one approved bump PR
    ALLOWLIST_STALE = "allowlist-stale"  # repo_key: the stale-allowlist PR and its evidence
    DASHBOARD = "dashboard"  # repo_key: the dashboard issue and its last body
    DASHBOARD_ALLOWLIST = "dashboard-allowlist"  # repo_key: the allowlist row
    DASHBOARD_PIN = "dashboard-pin"  # pin_key: one pin's dashboard row
    DASHBOARD_ROUTING = "dashboard-routing"  # repo_key: main's routing, for the dashboard
    DEPLOYMENT = "deployment"  # a deployment id of this database, carried by its dashboards
    WHEEL_AUDIT = "wheel-audit"  # build URL: a wheel audit already done
    MIGRATION = "migration"  # migration_key: a migration's PR, intent and last result
    MAIN_SIGNAL = "main-signal"  # signal_key: one step's state on main and its follow-ups
    IMAGE_CHECK = "image-check"  # repo_key: the last registry check of a build's images
    IMAGE_CHECK_BUILD = "image-check-build"  # build URL: this build's images were checked
    # -- records: one command, event or comment each; retention may forget them -------
    RETRY_COMMAND = "retry-command"  # comment key: this retry-flaky comment was handled
    RETRY_PR = "retry-pr"  # pr_key: the PR's one retry comment, edited in place
    RETRY_JOB = "retry-job"  # job id: a job the bot retried and how the retry ended
    RETRY_STEP = "retry-step"  # build and step: retries per step, for the per-step cap
    RETRY_PLAN = "retry-plan"  # comment key: what a command is about to do
    POSTED_COMMENT = "posted-comment"  # comment_key: a comment the bot posted or is posting
    # -- legacy: no longer written or read; old rows wait for retention ---------------
    COMMAND_REPLY = "command-reply"
    LANDING_REPLY = "landing-reply"
    ALLOWLIST_COMMENT = "allowlist-comment"


# Why retention may delete each prunable kind. Each is written when a command, event
# or comment is handled and read only when that same one comes back, which does not
# happen a retention window later.
PRUNABLE: dict[Kind, str] = {
    Kind.RETRY_COMMAND: "guards a redelivered issue_comment, which does not come a month later",
    Kind.RETRY_JOB: (
        "filled in by job.finished minutes later; also the dashboard's and `report flaky`'s"
        " audit trail, which thus cover the retention window"
    ),
    Kind.RETRY_STEP: "nobody retries a build a month after its last retry",
    Kind.RETRY_PLAN: (
        "deleted once the command is done; one left behind belongs to a delivery that gave up"
    ),
    Kind.RETRY_PR: "after a quiet month a new command posts a fresh comment instead",
    Kind.POSTED_COMMENT: (
        "read when the same delivery or a redelivery wants the comment again; a month later"
        " neither happens, and a record still pending belongs to a finished delivery"
    ),
    Kind.IMAGE_CHECK_BUILD: (
        "guards a redelivered build or job event, which does not come a month later"
    ),
    Kind.COMMAND_REPLY: "legacy: replaced by posted-comment, no longer read",
    Kind.LANDING_REPLY: "legacy: replaced by posted-comment, no longer read",
    Kind.ALLOWLIST_COMMENT: "legacy: replaced by posted-comment, no longer read",
}
PRUNABLE_KINDS: frozenset[str] = frozenset(PRUNABLE)
LEGACY_KINDS: frozenset[Kind] = frozenset(
    {Kind.COMMAND_REPLY, Kind.LANDING_REPLY, Kind.ALLOWLIST_COMMENT}
)


def repo_key(repo: _Repo | str) -> str:
    """The key of a per-repository document: ``owner/name``."""
    return repo if isinstance(repo, str) else repo.full_name


def pin_key(repo: _Repo | str, pin: str) -> str:
    """The key of a per-pin document: ``owner/name#pin``."""
    return f"{repo_key(repo)}#{pin}"


def pr_key(repo: _Repo | str, number: int) -> str:
    """The key of a per-PR document: ``owner/name#number``."""
    return f"{repo_key(repo)}#{number}"


def migration_key(repo: _Repo | str, name: str) -> str:
    """The key of a per-migration document: ``owner/name#migrate/<migration>``."""
    return f"{repo_key(repo)}#migrate/{name}"


def signal_key(repo: _Repo | str, pipeline: str, step: str, lane: str = "") -> str:
    """The key of one step's main-branch signal: ``owner/name#red/<pipeline>/<step>``, and
    ``@<lane>`` after it for a lane of main other than the regular one (whose documents
    kept the key they had before lanes: two lanes of a step never share an episode)."""
    return f"{repo_key(repo)}#red/{pipeline}/{step}" + (f"@{lane}" if lane else "")
