"""The decisions behind landing an approved bump, as pure functions.

Kept apart from ``bot.landing.flow`` (which does the I/O) so that the bump flow can
consult the cooldown without importing the landing flow, and so that every
rule here is tested without a network: which paths a PR may touch, who owns a
path by CODEOWNERS, whether an approval is of the current head, how many CI
attempts a head gets, whether a pin is still cooling down, which builds ran the
full CI, and which refused merges lost a race with the base branch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

from bot.config.path_globs import path_matches as path_matches  # re-exported
from bot.config.path_globs import translate

# Like AutoRoll: a head gets its first CI run and at most two retried ones.
MAX_LANDING_ATTEMPTS = 3
# Where GitHub looks for CODEOWNERS, in its order of precedence.
CODEOWNERS_PATHS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
_WILDCARDS = frozenset("*?[")


def paths_outside(paths: Iterable[str], globs: Sequence[str]) -> list[str]:
    """The paths no glob allows, sorted; empty when the PR may be landed."""
    return sorted({path for path in paths if not any(path_matches(path, g) for g in globs)})


def touched_paths(files: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every path a PR's file list touches; a rename touches its old name too."""
    paths: set[str] = set()
    for entry in files:
        paths.add(str(entry["filename"]))
        previous = entry.get("previous_filename")
        if isinstance(previous, str) and previous:
            paths.add(previous)
    return sorted(paths)


# --- CODEOWNERS ----------------------------------------------------------------------


@dataclass(frozen=True)
class OwnerRule:
    pattern: str
    owners: tuple[str, ...]  # as written: "@user", "@org/team" or an e-mail address


@lru_cache(maxsize=512)
def _codeowners_glob(pattern: str) -> re.Pattern[str]:
    # gitignore-style, as GitHub applies it: a pattern with a slash before its end
    # is anchored at the root; otherwise it matches at any depth. A pattern may
    # name a directory, and then owns everything below it, except that a last
    # segment with a wildcard (``docs/*``) covers only that one level.
    directory_only = pattern.endswith("/")
    body = pattern.strip("/")
    anchored = "/" in pattern.rstrip("/")
    prefix = "" if anchored else "(?:.*/)?"
    last = body.rsplit("/", 1)[-1]
    if directory_only:
        suffix = "/.*"
    elif _WILDCARDS & set(last) and last != "**":
        suffix = ""
    else:
        suffix = "(?:/.*)?"
    return re.compile(prefix + translate(body) + suffix + r"\Z")


def parse_codeowners(text: str) -> list[OwnerRule]:
    """The rules of a CODEOWNERS file, in file order (the last match wins)."""
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tokens = line.split()
        owners = []
        for token in tokens[1:]:
            if token.startswith("#"):
                break  # the rest of the line is a comment
            owners.append(token)
        rules.append(OwnerRule(tokens[0].replace("\\#", "#"), tuple(owners)))
    return rules


def owners_of(path: str, rules: Sequence[OwnerRule]) -> tuple[str, ...]:
    """The owners of ``path``: those of the last matching rule (none: unowned)."""
    for rule in reversed(rules):
        if _codeowners_glob(rule.pattern).match(path):
            return rule.owners
    return ()


def is_user_owner(login: str, owners: Iterable[str]) -> bool:
    """Whether ``login`` is named in ``owners`` as a user. Teams (``@org/team``) and
    e-mail entries never count: see the ``codeowners`` key in docs/configuration.md."""
    wanted = f"@{login}".casefold()
    return any(owner.casefold() == wanted for owner in owners if "/" not in owner)


def paths_not_owned_by(login: str, paths: Iterable[str], rules: Sequence[OwnerRule]) -> list[str]:
    """The paths ``login`` does not own as a user; empty when they own every one."""
    return sorted(path for path in set(paths) if not is_user_owner(login, owners_of(path, rules)))


# --- heads, attempts, cooldown ---------------------------------------------------------


def approved_at_head(commit_id: object, head: str) -> bool:
    """An approval counts only for the commit it was given on, and only if that is the head."""
    return isinstance(commit_id, str) and bool(commit_id) and commit_id == head


def may_retry(failed_runs: int, max_attempts: int = MAX_LANDING_ATTEMPTS) -> bool:
    """After ``failed_runs`` failed CI runs of one head, whether another attempt is allowed."""
    return failed_runs < max_attempts


def in_cooldown(doc: Mapping[str, Any] | None, now: float, minutes: int) -> bool:
    """Whether a pin whose cooldown record is ``doc`` (store kind ``pin-cooldown``, key
    ``<repo>#<pin>``) landed less than ``minutes`` ago at ``now`` (epoch seconds)."""
    if not doc:
        return False
    landed = doc.get("landed_at")
    if isinstance(landed, bool) or not isinstance(landed, int | float):
        return False
    return now < float(landed) + minutes * 60.0


# --- check runs --------------------------------------------------------------------------

# Conclusions GitHub itself accepts for a required check (the rest block a merge).
CHECK_CONCLUSIONS_OK = frozenset({"success", "neutral", "skipped"})
COMPLETED = "completed"


def latest_check_runs(runs: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The newest run of each check name (a re-run adds a run; the newest one counts)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for run in runs:
        name = str(run.get("name") or "")
        kept = latest.get(name)
        if kept is None or int(run.get("id") or 0) > int(kept.get("id") or 0):
            latest[name] = run
    return latest


def check_runs_not_green(runs: Iterable[Mapping[str, Any]], required: Sequence[str]) -> str | None:
    """Why the head's check runs keep it from merging, or None.

    ``required`` are name globs: every run whose name matches one must have completed
    with an accepted conclusion, and a name without wildcards must have reported at all
    (as GitHub waits for a required check that has not started)."""
    latest = latest_check_runs(runs)
    for name, run in sorted(latest.items()):
        if not any(fnmatchcase(name, glob) for glob in required):
            continue
        if run.get("status") != COMPLETED:
            return f"check run {name!r} is {run.get('status')}"
        if run.get("conclusion") not in CHECK_CONCLUSIONS_OK:
            return f"check run {name!r} concluded {run.get('conclusion')}"
    for glob in required:
        if not _WILDCARDS & set(glob) and glob not in latest:
            return f"check run {glob!r} has not reported"
    return None


# --- the full CI ---------------------------------------------------------------------------

LABELED = "labeled"


def parse_time(value: object) -> float | None:
    """Epoch seconds of an ISO 8601 time as GitHub (``2026-08-06T12:00:00Z``) and Buildkite
    (``...T12:00:00.123Z``) write them; a time without a zone is UTC; None if it is none."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def labels_on_since(events: Iterable[Mapping[str, Any]], labels: Sequence[str]) -> float | None:
    """When the last of ``labels`` went on the PR, by its timeline: each label's newest
    ``labeled`` event (a label taken off and put back starts the full CI again), the
    latest of those. None while one of them has no such event yet (none when ``labels``
    is empty: the caller asks only when there are labels)."""
    wanted = {label.casefold() for label in labels}
    newest: dict[str, float] = {}
    for event in events:
        label = event.get("label")
        at = parse_time(event.get("created_at"))
        if event.get("event") != LABELED or not isinstance(label, Mapping) or at is None:
            continue
        name = str(label.get("name") or "").casefold()
        if name in wanted:
            newest[name] = max(at, newest.get(name, at))
    if not wanted or set(newest) != wanted:
        return None
    return max(newest.values())


def counts_for_landing(build: Mapping[str, Any], since: float | None) -> bool:
    """Whether a build ran the pipeline the PR is meant to pass: any build when nothing is
    labelled on approval (``since`` None), else one created once the labels were all on.
    GitHub's times are whole seconds: a build created within the label's second counts."""
    if since is None:
        return True
    created = parse_time(build.get("created_at"))
    return created is not None and created >= since


def full_build_overdue(since: float, now: float, minutes: int) -> bool:
    """Whether ``minutes`` have passed since the labels went on without a full build."""
    return now >= since + minutes * 60.0


# --- merge races ----------------------------------------------------------------------------

MERGE_NOT_ALLOWED = 405  # GitHub will not merge now (checks, reviews, or a moving base)
MERGE_CONFLICT = 409  # the sha named is not the head, or the base moved under the merge
# A refused merge is tried again (through the inbox, with its backoff) this many times
# at an unchanged head; the next refusal leaves the PR to humans.
MERGE_RACE_RETRIES = 3
# ``mergeable_state`` values that say the base moved: GitHub is still working out the
# merge (``unknown``) or the branch is behind it.
RACE_STATES = frozenset({"behind", "unknown"})


def lost_a_race(status: int, mergeable_state: object) -> bool:
    """Whether a merge refused at an unchanged head lost a race with its base branch: any
    409, or a 405 while the PR is behind or its mergeability unknown. A 405 for missing
    reviews or checks (``blocked``, ``unstable``...) is no race: that waits for them."""
    if status == MERGE_CONFLICT:
        return True
    return status == MERGE_NOT_ALLOWED and mergeable_state in RACE_STATES


def may_merge_again(refusals: int) -> bool:
    """After ``refusals`` merges lost to races at one head, whether to try once more."""
    return refusals <= MERGE_RACE_RETRIES
