"""What the "CI routing" check says about a PR: the steps whose routing changes, the
rules the PR newly breaks, and the conclusion — pure, from the two trees (``pull_report``)
or the two routings (``compare``).

A problem main already has is not the PR's: it is counted, not annotated, so a PR is
never failed for someone else's mistake. Problems are told apart by file and message
(not line: a PR that inserts lines above one must not make it "new").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bot.config.routing import RoutingConfig
from bot.routing.invariants import UNREADABLE, invariant_of
from bot.routing.model import RoutedStep, route
from bot.routing.problems import RoutingProblem
from bot.routing.repo_tables import routing_problems
from bot.routing.tables import RoutingTables

CHECK_NAME = "CI routing"
MAX_TABLE_ROWS = 200  # GitHub caps a check run's summary at 65,535 characters

TITLE_CLEAN = "{changed} step{s} change routing; no rule broken"
TITLE_PROBLEMS = "{count} routing problem{s} ({errors} failing)"
SUMMARY_HEAD = (
    "Routing of every CI step before and after this PR, as vLLM's pipeline generator "
    "computes it from `.buildkite`."
)
TABLE_HEAD = "| step | file | queue | plugin | image | GPUs |\n|---|---|---|---|---|---|"
UNCHANGED = "{count} other step{s} route as before."
OLD_PROBLEMS = "{count} problem{s} already on the base branch (not this PR's) not shown."
MORE_ROWS = "… and {count} more changed steps."
ABSENT = "—"
NO_PLUGIN = "none"
NO_IMAGE = "no commit image"
CUDA_IMAGE = "CUDA"


@dataclass(frozen=True)
class Change:
    key: str
    before: RoutedStep | None  # None: a new step
    after: RoutedStep | None  # None: a removed step


@dataclass(frozen=True)
class Finding:
    problem: RoutingProblem
    invariant: str
    failing: bool


@dataclass(frozen=True)
class Report:
    changes: tuple[Change, ...]
    unchanged: int
    findings: tuple[Finding, ...]  # the PR's own problems
    old_problems: int

    @property
    def conclusion(self) -> str:
        if any(finding.failing for finding in self.findings):
            return "failure"
        return "neutral" if self.findings else "success"

    @property
    def worth_posting(self) -> bool:
        """A PR that changes no routing and breaks nothing gets no check run at all."""
        return bool(self.changes or self.findings)


def _routing(step: RoutedStep) -> tuple[object, ...]:
    return (step.queue, step.plugin, step.image_suffix, step.gpus)


def compare(
    before: Sequence[RoutedStep],
    after: Sequence[RoutedStep],
    before_problems: Sequence[RoutingProblem],
    after_problems: Sequence[RoutingProblem],
    *,
    warnings: Sequence[str],
) -> Report:
    old = {step.key: step for step in before}
    new = {step.key: step for step in after}
    changes = [
        Change(key, old.get(key), new.get(key))
        for key in [*new, *(key for key in old if key not in new)]
        if key not in old or key not in new or _routing(old[key]) != _routing(new[key])
    ]
    seen = {(problem.file, problem.message) for problem in before_problems}
    findings = [
        Finding(problem, name, name == UNREADABLE or name not in warnings)
        for problem in after_problems
        if (problem.file, problem.message) not in seen
        for name in [invariant_of(problem)]
    ]
    old_count = sum((problem.file, problem.message) in seen for problem in after_problems)
    unchanged = len([key for key in new if key in old]) - sum(
        change.before is not None and change.after is not None for change in changes
    )
    return Report(tuple(changes), unchanged, tuple(findings), old_count)


def pull_report(
    base: Mapping[str, str],
    head: Mapping[str, str],
    routing: RoutingConfig,
    tables: RoutingTables,
    env: Mapping[str, str],
) -> Report:
    """The check on a PR: its base's and its head's ``{path: text}``, routed alike (``env``:
    the PR's own build), compared."""
    before = route(base, env=env, tables=tables)
    after = route(head, env=env, tables=tables)
    return compare(
        before.steps,
        after.steps,
        routing_problems(before, routing, tables),
        routing_problems(after, routing, tables),
        warnings=routing.warnings,
    )


BAD_TABLES = "routing.tables in the config: {reason}"
CONFIG_FILE = ".github/followup-bot.yml"


def bad_tables_report(reason: str) -> Report:
    """A config whose table overrides cannot be read: the check says so and fails."""
    problem = RoutingProblem(CONFIG_FILE, 1, 1, BAD_TABLES.format(reason=reason), fatal=True)
    return Report((), 0, (Finding(problem, UNREADABLE, failing=True),), 0)


def title(report: Report) -> str:
    if not report.findings:
        changed = len(report.changes)
        return TITLE_CLEAN.format(changed=changed, s=_s(changed))
    errors = sum(finding.failing for finding in report.findings)
    count = len(report.findings)
    return TITLE_PROBLEMS.format(count=count, s=_s(count), errors=errors)


def summary(report: Report) -> str:
    parts = [SUMMARY_HEAD]
    if report.changes:
        rows = [_row(change) for change in report.changes[:MAX_TABLE_ROWS]]
        parts.append("\n".join([TABLE_HEAD, *rows]))
        if len(report.changes) > MAX_TABLE_ROWS:
            parts.append(MORE_ROWS.format(count=len(report.changes) - MAX_TABLE_ROWS))
    parts.append(UNCHANGED.format(count=report.unchanged, s=_s(report.unchanged)))
    if report.old_problems:
        parts.append(OLD_PROBLEMS.format(count=report.old_problems, s=_s(report.old_problems)))
    return "\n\n".join(parts)


def _row(change: Change) -> str:
    return routing_row(change.key, change.before, change.after)


def routing_row(key: str, before: RoutedStep | None, after: RoutedStep | None) -> str:
    """One row of ``TABLE_HEAD``: a step's routing, old → new where it changes."""
    step = after or before
    assert step is not None  # a change has one side at least
    cells = [
        f"`{key}`",
        f"`{step.file}`",
        _pair(before, after, lambda s: s.queue),
        _pair(before, after, lambda s: s.plugin or NO_PLUGIN),
        _pair(before, after, _image),
        _pair(before, after, lambda s: str(s.gpus)),
    ]
    return "| " + " | ".join(cells) + " |"


def _pair(
    before: RoutedStep | None, after: RoutedStep | None, read: Callable[[RoutedStep], str]
) -> str:
    old = ABSENT if before is None else str(read(before))
    new = ABSENT if after is None else str(read(after))
    return new if old == new else f"{old} → **{new}**"


def _image(step: RoutedStep) -> str:
    if step.image_suffix is None:
        return NO_IMAGE
    return f"`{step.image_suffix}`" if step.image_suffix else CUDA_IMAGE


def _s(count: int) -> str:
    return "" if count == 1 else "s"
