"""Commit statuses, required status checks and the merge state GitHub derives from them.

Pure functions of the stand-in's records (no git, no I/O), so the REST routes, the
GraphQL resolvers and the setup API all judge a pull request the same way. A
required check is a name: a commit status context or a check run's name count alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandbox.github_check_runs import failing, latest_by_name, passing, runs_at
from sandbox.github_state import CheckRun, CommitStatus, PullInfo, Repo

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


def _verdicts(status: CommitStatus | None, run: CheckRun | None) -> tuple[bool, bool]:
    """(failing, passing) of one required name, from its newest status and check run."""
    failed = (status is not None and status.state in FAILED_STATES) or (
        run is not None and failing(run)
    )
    passed = (status is not None and status.state == "success") or (
        run is not None and passing(run)
    )
    return failed, passed


def required_check_blocker(repo: Repo, pull: PullInfo) -> str | None:
    """Why branch protection refuses to merge ``pull`` now; None when it allows it.

    Each required name needs a successful status of that context or a check run of
    that name completed as success, neutral or skipped; a failing one of either kind
    blocks even when the other passes.
    """
    latest = {s.context: s for s in latest_by_context(repo.statuses.get(pull.head_sha, []))}
    runs = {run.name: run for run in latest_by_name(runs_at(repo, pull.head_sha))}
    for context in repo.required_contexts.get(pull.base_ref, ()):
        failed, passed = _verdicts(latest.get(context), runs.get(context))
        if failed:
            return REQUIRED_FAILING.format(context=context)
        if not passed:
            return REQUIRED_EXPECTED.format(context=context)
    return None


def merge_state(repo: Repo, pull: PullInfo, conflict_free: bool) -> str:
    """GitHub's ``mergeable_state`` of an open pull request whose mergeability is known."""
    if not conflict_free:
        return STATE_DIRTY
    if required_check_blocker(repo, pull) is not None:
        return STATE_BLOCKED
    latest = latest_by_context(repo.statuses.get(pull.head_sha, []))
    runs = latest_by_name(runs_at(repo, pull.head_sha))
    # "Mergeable with non-passing commit status": any status or check run not passing.
    if any(status.state != "success" for status in latest) or not all(map(passing, runs)):
        return STATE_UNSTABLE
    return STATE_CLEAN
