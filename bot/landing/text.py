"""What the bot says while landing an approved bump (tests assert these texts)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bot.github import neutralise

# Hidden markers: which decision a comment belongs to, for humans reading the
# raw text and for tests; idempotency itself lives in the store.
MARKER_REFUSED = "<!-- followup-bot:landing-refused review={review} -->"
MARKER_REAPPROVE = "<!-- followup-bot:landing-reapprove head={head} -->"
MARKER_STOPPED = "<!-- followup-bot:landing-stopped head={head} -->"
MARKER_CHANGES = "<!-- followup-bot:landing-changes-requested head={head} -->"
MARKER_BLOCKED = "<!-- followup-bot:landing-blocked head={head} -->"
MARKER_DISMISSED = "<!-- followup-bot:landing-dismissed review={review} -->"
MARKER_NO_FULL_BUILD = "<!-- followup-bot:landing-no-full-build head={head} -->"
MARKER_MERGE_RACES = "<!-- followup-bot:landing-merge-races head={head} -->"
LANDING_BLOCKED = (
    "Landing `{head7}` on {judged}: every job that ran passed. These steps sit behind a "
    "block step and did not run (`landing.blocked_builds: wait` makes the bot wait for "
    "them):\n{rows}"
)
BLOCKED_ROW = "- {build}: {steps}"
# The builds a landing was judged on: with labels on approval, those of the full CI.
JUDGED_AFTER_LABELS = "{builds}, created after {labels} went on the PR"
BUILD_LINK = "[{pipeline} #{number}]({url})"

# No build of the full CI started in time (said once per head).
NO_FULL_BUILD = (
    "Landing `{head7}` waits for the full CI: {minutes} minutes after {labels} went on the "
    "PR, no build of it was created in {pipelines}. A build from before ran the reduced "
    "pipeline and does not count ({earlier}). The approval stands: a build of `{head7}` "
    "started now lands the PR once it passes."
)
NO_EARLIER_BUILD = "there is none"
# Why landing waits (the log line), and what makes the inbox run the delivery again.
WAITING_FOR_FULL_BUILD = "no build of {head7} in {pipelines} created since {labels} went on"
LABELS_NOT_ON = "{labels} not on the PR: no build counts for landing"
LABELS_NOT_IN_TIMELINE = "{labels} on #{number} but not yet in its timeline; looking again"
FULL_BUILD_MESSAGE = "Full CI of #{number} at {head7} for landing (started by followup-bot)"

MERGE_RACE_AGAIN = (
    "merge of {head7} refused ({status}, mergeable_state {state}) while the head stayed: "
    "the base moved; trying again ({count} of {limit})"
)
MERGE_RACES_LOST = (
    "Landing stopped: GitHub refused to merge `{head7}` {count} times although the PR's head "
    "did not move (the base branch kept moving under the merge; the last answer was "
    "{status}). Leaving this PR to humans: a maintainer can merge it by hand."
)

REFUSED = (
    "Thanks for the review, @{login}. The bot will not land this PR on that approval: "
    "{reason}.\n\n{next_step}"
)
WHY_PERMISSION = "only people with write access to this repository can approve a bump for landing"
WHY_PERMISSION_OR_OWNER = (
    "only people with write access to this repository, or a code owner of every file "
    "it touches, can approve a bump for landing; you do not own {paths}"
)
WHY_STALE = (
    "the approval is of {approved7}, but the PR's head is now {head7}; "
    "approve the current head to land it"
)
WHY_PATHS = "it touches {paths}, outside the paths the bot may land ({globs})"
NEXT_STEP_HUMAN = "A maintainer can still merge it by hand."
NEXT_STEP_REAPPROVE = "Approve the current head to land it."

REAPPROVAL_NEEDED = (
    "The bump was updated to {head7} after it was approved at {approved7}, so that approval "
    "no longer lands it: re-approval is needed."
)
REAL_FAILURE = (
    "Landing stopped: the CI build [#{build}]({build_url}) of {head7} failed in a way a retry "
    "would not fix. Leaving this PR to humans.\n\n{rows}"
)
TOO_MANY_FAILED = (
    "Landing stopped: {count} jobs of the CI build [#{build}]({build_url}) of {head7} failed "
    "(more than {limit} is not flakiness). Leaving this PR to humans.\n\n{rows}"
)
ATTEMPTS_EXHAUSTED = (
    "Landing stopped: the CI of {head7} failed {attempts} times (the last was build "
    "[#{build}]({build_url})), the most the bot tries per head. Leaving this PR to humans."
    "\n\n{rows}"
)
NOT_RETRYABLE = (
    "Landing stopped: the CI build [#{build}]({build_url}) of {head7} failed and its flaky "
    "jobs could not be retried. Leaving this PR to humans.\n\n{rows}"
)
ROW = "- [{name}]({url}): {failure_class}: {evidence}"
RETRY_REASON = "landing {head7}, attempt {attempt}"


def code(items: Iterable[str]) -> str:
    """Paths or globs as code spans (a path in a PR can hold any character)."""
    return ", ".join(neutralise.code(item) for item in items)


def failing_rows(rows: Iterable[Mapping[str, Any]]) -> str:
    """One line per failed job: its name, class and evidence (Buildkite's label and
    log text, so neutralised)."""
    return "\n".join(
        ROW.format(
            name=neutralise.inline(str(row["name"])),
            url=row["url"],
            failure_class=neutralise.inline(str(row["class"])),
            evidence=neutralise.inline(str(row["evidence"])),
        )
        for row in rows
    )


CANCELED_JOBS = "Canceled while they ran (no failure, not counted, not retried):\n{rows}"
STOPPED_FOR_CHANGES = (
    "Landing stopped: @{login} requested changes after `{approved7}` was approved. "
    "Approve the PR again to land it."
)
STOPPED_FOR_DISMISSAL = (
    "Landing stopped: @{login} dismissed the approval of `{approved7}` it was based on. "
    "Approve the PR again to land it."
)
