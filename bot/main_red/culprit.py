"""Which commit between a step's last green build and its first red one broke it.

A broken step names a range of commits (last green, first red]. Blaming the
wrong one costs a revert of someone's good work, so a commit is named only on
evidence a maintainer can check, strongest first:

1. it is the only commit in the range (certain);
2. the step's route changed in the range (queue, plugin, image, GPUs...: what
   incident A was), and the commit touched the step's job file or a file that
   routes every step (``ci_config.yaml``);
3. it touched the step's job file (the route did not change: the commands,
   the environment, the timeout);
4. it touched a file the step's ``source_file_dependencies`` cover, matched as
   the generator matches them: an entry covers a path equal to it (a trailing
   ``/`` removed) or under it (``csrc/mamba/`` and ``csrc/mamba`` cover
   ``csrc/mamba/x.cu``, not ``csrc/mamba2/x.cu``); an empty entry covers nothing;
   a path counts when an include covers it and no ``!`` exclusion does. (The
   generator also adds a job file with a file-level ``depends_on`` to its steps'
   dependencies: that edit is already evidence 2 or 3.)

A culprit is named when exactly one commit holds the strongest evidence
present; otherwise every commit is a candidate, in order, and none is named.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.routing.model import RoutedStep

WHY_EMPTY = "no commits between last green and first red: history rewritten or inconsistent"
WHY_ONLY = "{sha} is the only commit between last green and first red"
WHY_ONE = "{sha} is the only commit in the range that {evidence}"
WHY_SHARED = "{count} commits in the range {evidence}: no single culprit"
WHY_NONE = (
    "none of the {count} commits in the range changed the step's route, job file "
    "or source dependencies"
)
SHORT_SHA = 12
EXCLUDE = "!"  # a source_file_dependencies entry starting with it excludes

# How a missing value or a missing step reads in a route change.
NONE = "none"
ABSENT = "absent"
PRESENT = "present"
STEP_FIELD = "step"
ROUTE_FIELDS = (
    "queue",
    "plugin",
    "image_suffix",
    "gpus",
    "device",
    "num_devices",
    "num_nodes",
    "depends_on",
)

# A squash merge's subject ends with its PR: "Fix the audit (#23456)".
_PULL = re.compile(r"\(#(\d+)\)")


class Evidence(StrEnum):
    # Each reads after "the only commit in the range that ...".
    ROUTE = "changed the step's route"
    JOB_FILE = "touched the step's job file"
    SOURCE = "touched the step's source_file_dependencies"
    ONLY_COMMIT = "is the only commit in the range"


class Confidence(StrEnum):
    CERTAIN = "certain"  # one commit in the range
    HIGH = "high"  # exactly one commit with route evidence
    MEDIUM = "medium"  # exactly one commit with the strongest other evidence
    LOW = "low"  # several share the strongest evidence, or none has any: no culprit


# ONLY_COMMIT alone settles it; the rest in the order of the module docstring.
_STRENGTH = {Evidence.ONLY_COMMIT: 4, Evidence.ROUTE: 3, Evidence.JOB_FILE: 2, Evidence.SOURCE: 1}


@dataclass(frozen=True)
class RangeCommit:
    sha: str
    subject: str
    files: tuple[str, ...]
    pull_number: int | None = None


@dataclass(frozen=True)
class RouteChange:
    field: str
    before: str
    after: str


@dataclass(frozen=True)
class Candidate:
    commit: RangeCommit
    evidence: tuple[Evidence, ...]  # strongest first

    @property
    def strength(self) -> int:
        return max((_STRENGTH[e] for e in self.evidence), default=0)


@dataclass(frozen=True)
class Ranking:
    candidates: tuple[Candidate, ...]  # strongest evidence first, then range order
    culprit: Candidate | None
    confidence: Confidence
    why: str


def pull_number_of(subject: str) -> int | None:
    """The PR a squash-merged commit came from: the last ``(#N)`` of its subject."""
    found = _PULL.findall(subject)
    return int(found[-1]) if found else None


def route_changes(before: RoutedStep | None, after: RoutedStep | None) -> tuple[RouteChange, ...]:
    """What changed in where the step runs and what it pulls, field by field."""
    if before is None and after is None:
        return ()
    if before is None:
        return (RouteChange(STEP_FIELD, ABSENT, PRESENT),)
    if after is None:
        return (RouteChange(STEP_FIELD, PRESENT, ABSENT),)
    changes = []
    for name in ROUTE_FIELDS:
        old, new = _text(getattr(before, name)), _text(getattr(after, name))
        if old != new:
            changes.append(RouteChange(name, old, new))
    return tuple(changes)


def _text(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(item) for item in value) or NONE
    return NONE if value is None else str(value)


def covers(entry: str, path: str) -> bool:
    """Whether one dependency entry (its ``!`` taken off) covers ``path``: the path
    itself, or a path under it as a directory."""
    prefix = entry.rstrip("/")
    return bool(prefix) and (path == prefix or path.startswith(prefix + "/"))


def _includes(dependencies: Sequence[str]) -> list[str]:
    return [entry for entry in dependencies if not entry.startswith(EXCLUDE)]


def _excludes(dependencies: Sequence[str]) -> list[str]:
    return [entry.removeprefix(EXCLUDE) for entry in dependencies if entry.startswith(EXCLUDE)]


def excluded(path: str, dependencies: Sequence[str]) -> bool:
    """Whether a ``!`` entry covers ``path``: the generator ignores that change."""
    return any(covers(entry, path) for entry in _excludes(dependencies))


def source_matches(path: str, dependencies: Sequence[str]) -> bool:
    """Whether the generator would run the step for a change of ``path``."""
    if excluded(path, dependencies):
        return False
    return any(covers(entry, path) for entry in _includes(dependencies))


def trace_paths(touched: Collection[str], dependencies: Sequence[str]) -> tuple[str, ...]:
    """What to list the range's commits by to learn which touched the step's sources.

    GitHub lists a directory's commits in one call, so a counted path is traced by the
    widest include covering it, written without its trailing ``/`` (the form the
    listing takes and ``source_matches`` accepts). A commit found by a directory may
    have touched only an excluded file under it, so when the range touched an excluded
    file under every covering include, the counted path is traced by itself.
    """
    shadows = [path for path in touched if excluded(path, dependencies)]
    traced = {
        _trace(path, dependencies, shadows)
        for path in touched
        if source_matches(path, dependencies)
    }
    return tuple(sorted(traced))


def _trace(path: str, dependencies: Sequence[str], shadows: Sequence[str]) -> str:
    entries = sorted(
        (entry.rstrip("/") for entry in _includes(dependencies) if covers(entry, path)), key=len
    )
    clear = (entry for entry in entries if not any(covers(entry, s) for s in shadows))
    return next(clear, path)


def rank(
    commits: Sequence[RangeCommit],
    *,
    job_files: Collection[str],
    routing_files: Collection[str],
    source_dependencies: Sequence[str],
    route_changed: bool,
) -> Ranking:
    """The commits of the range (oldest first) ranked by evidence; see the module docstring."""
    if not commits:
        return Ranking((), None, Confidence.LOW, WHY_EMPTY)
    candidates = [
        Candidate(
            commit,
            _evidence(
                commit,
                job_files=job_files,
                routing_files=routing_files,
                source_dependencies=source_dependencies,
                route_changed=route_changed,
                only=len(commits) == 1,
            ),
        )
        for commit in commits
    ]
    ranked = tuple(sorted(candidates, key=lambda c: -c.strength))  # stable: range order
    best = ranked[0]
    if len(commits) == 1:
        why = WHY_ONLY.format(sha=_short(best.commit))
        return Ranking(ranked, best, Confidence.CERTAIN, why)
    if best.strength == 0:
        return Ranking(ranked, None, Confidence.LOW, WHY_NONE.format(count=len(commits)))
    strongest = best.evidence[0]
    holders = [c for c in ranked if c.strength == best.strength]
    if len(holders) > 1:
        why = WHY_SHARED.format(count=len(holders), evidence=strongest.value)
        return Ranking(ranked, None, Confidence.LOW, why)
    confidence = Confidence.HIGH if strongest is Evidence.ROUTE else Confidence.MEDIUM
    why = WHY_ONE.format(sha=_short(best.commit), evidence=strongest.value)
    return Ranking(ranked, best, confidence, why)


def _evidence(
    commit: RangeCommit,
    *,
    job_files: Collection[str],
    routing_files: Collection[str],
    source_dependencies: Sequence[str],
    route_changed: bool,
    only: bool,
) -> tuple[Evidence, ...]:
    found = []
    if only:
        found.append(Evidence.ONLY_COMMIT)
    touched_job = any(path in job_files for path in commit.files)
    if route_changed and (touched_job or any(path in routing_files for path in commit.files)):
        found.append(Evidence.ROUTE)
    elif touched_job:
        found.append(Evidence.JOB_FILE)
    if any(source_matches(path, source_dependencies) for path in commit.files):
        found.append(Evidence.SOURCE)
    return tuple(found)


def _short(commit: RangeCommit) -> str:
    return commit.sha[:SHORT_SHA]


__all__ = [
    "Candidate",
    "Confidence",
    "Evidence",
    "RangeCommit",
    "Ranking",
    "RouteChange",
    "covers",
    "excluded",
    "pull_number_of",
    "rank",
    "route_changes",
    "source_matches",
    "trace_paths",
]
