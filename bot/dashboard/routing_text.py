"""The dashboard's "CI routing" section: main's steps per queue, the migration PRs with
the steps they still move, and the rules main breaks (shown only when the repository
configures routing or migrations)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.github import neutralise

HEADING_ROUTING = "## CI routing"
ROUTING_INTRO = "Where main's CI steps run (at `{base7}`), as the pipeline generator routes them."
QUEUE_HEADER = "| queue | steps |\n|---|---|"
MIGRATION_HEADER = "| migration | PR | steps left | last result |\n|---|---|---|---|"
NO_PROBLEMS = "Main breaks no routing rule."
PROBLEMS = "Main breaks {count} routing rule{s}:"
MORE_PROBLEMS = "… and {count} more (`followup-bot routes` lists them all)."
NOT_YET = "-"


@dataclass(frozen=True)
class MigrationRow:
    name: str
    pr: int | None
    steps_left: int | None
    last_result: str | None


@dataclass(frozen=True)
class RoutingSection:
    base: str
    queues: Mapping[str, int]
    problems: tuple[str, ...]
    problem_count: int
    migrations: tuple[MigrationRow, ...] = ()


def render_routing(section: RoutingSection) -> list[str]:
    parts = [HEADING_ROUTING, ROUTING_INTRO.format(base7=section.base[:7])]
    rows = [f"| `{queue}` | {count} |" for queue, count in sorted(section.queues.items())]
    parts.append("\n".join([QUEUE_HEADER, *rows]))
    if section.migrations:
        parts.append("\n".join([MIGRATION_HEADER, *map(_migration, section.migrations)]))
    parts.append(_problems(section.problems, section.problem_count))
    return parts


def _migration(row: MigrationRow) -> str:
    cells = [
        f"`{row.name}`",
        NOT_YET if row.pr is None else f"#{row.pr}",
        NOT_YET if row.steps_left is None else str(row.steps_left),
        row.last_result or NOT_YET,
    ]
    return "| " + " | ".join(cells) + " |"


def _problems(problems: Sequence[str], count: int) -> str:
    if not count:
        return NO_PROBLEMS
    # A problem quotes the repository's own files: inert, in one code block.
    lines = [PROBLEMS.format(count=count, s="" if count == 1 else "s")]
    lines.append(neutralise.code_block("\n".join(problems), "text"))
    if count > len(problems):
        lines.append(MORE_PROBLEMS.format(count=count - len(problems)))
    return "\n\n".join(lines)
