"""Commit statuses, required status checks and the merge state GitHub derives from them.

Pure functions of the stand-in's records (no git, no I/O), so the REST routes, the
GraphQL resolvers and the setup API all judge a pull request the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.sandbox.github_state import CommitStatus, PullInfo, Repo

STATUS_STATES = ("error", "failure", "pending", "success")
FAILED_STATES = frozenset({"error", "failure"})
# GitHub's 405 answers to a merge that branch protection refuses (wording as GitHub sends it).
REQUIRED_EXPECTED = 'Required status check "{context}" is expected.'
REQUIRED_FAILING = 'Required status check "{context}" is failing.'
# pulls/get `mergeable_state` values the stand-in computes.
STATE_CLEAN = "clean"
STATE_BLOCKED = "blocked"
STATE_UNSTABLE = "unstable"
STATE_DIRTY = "dirty"


def latest_by_context(statuses: Sequence[CommitStatus]) -> list[CommitStatus]:
    """The newest status of each context, newest first (what the combined status lists)."""
    seen: dict[str, CommitStatus] = {}
    for status in reversed(statuses):
        seen.setdefault(status.context, status)
    return list(seen.values())


def combined_state(latest: Sequence[CommitStatus]) -> str:
    """failure if any failed or errored, pending if any pending or none at all, else success."""
    states = {status.state for status in latest}
    if states & FAILED_STATES:
        return "failure"
    if not states or "pending" in states:
        return "pending"
    return "success"


def required_check_blocker(repo: Repo, pull: PullInfo) -> str | None:
    """Why branch protection refuses to merge ``pull`` now; None when it allows it."""
    latest = {s.context: s for s in latest_by_context(repo.statuses.get(pull.head_sha, []))}
    for context in repo.required_contexts.get(pull.base_ref, ()):
        status = latest.get(context)
        if status is not None and status.state in FAILED_STATES:
            return REQUIRED_FAILING.format(context=context)
        if status is None or status.state != "success":
            return REQUIRED_EXPECTED.format(context=context)
    return None


def merge_state(repo: Repo, pull: PullInfo, conflict_free: bool) -> str:
    """GitHub's ``mergeable_state`` of an open pull request whose mergeability is known."""
    if not conflict_free:
        return STATE_DIRTY
    if required_check_blocker(repo, pull) is not None:
        return STATE_BLOCKED
    latest = latest_by_context(repo.statuses.get(pull.head_sha, []))
    # "Mergeable with non-passing commit status": any status that is not success.
    if any(status.state != "success" for status in latest):
        return STATE_UNSTABLE
    return STATE_CLEAN
