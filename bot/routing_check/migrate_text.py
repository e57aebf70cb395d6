"""The migration PR's wording: its branch, title, body, commit message, trailers and
comments. Pure: text in, text out.

The commit carries trailers naming the migration and the digest of its edits, so a
bot that lost its store can still tell its own branch (and what it holds) from a
human's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from bot.github.bot_branches import MIGRATE_PREFIX
from bot.routing_check.report import TABLE_HEAD, routing_row
from bot.routing_check.sweep import Move, SweepPlan

BRANCH_PREFIX = MIGRATE_PREFIX
TRAILER_MIGRATION = "Followup-Bot-Migration"
TRAILER_EDITS = "Followup-Bot-Edits"
MARKER = "<!-- followup-bot:migration name={name} -->"
MARKER_DONE = "<!-- followup-bot:migration-done name={name} -->"
MARKER_HUMAN_PUSH = "<!-- followup-bot:migration-human-push name={name} head={head} -->"

TITLE = "Migrate {count} CI step{s}: {name}"
INTRO = "Every step the `{name}` migration selects gets its new routing ({files})."
EXCLUDED_HEAD = "### Left out"
EXCLUDED_ROW = "- `{key}` (`{file}`): {reason}"
PROVED = "Routing the result changes nothing else: proved on {base7}."
COMMENT_DONE = (
    "Nothing is left to migrate for `{name}` on {base7}: every step it selects already "
    "routes as it sets. Closing this PR."
)
COMMENT_HUMAN_PUSH = (
    "Someone else pushed to `{branch}` ({head7}); the bot leaves this branch alone now. "
    "Close the PR (and delete the branch) to have the bot open a fresh one."
)
REASON_NOT_PROVEN = (
    "the sweep would also change the routing of {others}; not proposing it until the "
    "migration's select or exclude leaves them out"
)
REASON_LOST_STEPS = "the edited files no longer route {keys}; not proposing the sweep"


def migration_branch(name: str) -> str:
    return f"{BRANCH_PREFIX}{name}"


def short(sha: str) -> str:
    return sha[:7]


def edits_digest(edits: Mapping[str, tuple[str, str]]) -> str:
    """What the sweep writes, as one value: equal digests mean the same commit content."""
    digest = hashlib.sha256()
    for path in sorted(edits):
        digest.update(path.encode() + b"\0" + edits[path][1].encode() + b"\0")
    return digest.hexdigest()[:16]


def title(name: str, plan: SweepPlan) -> str:
    count = len(plan.moves)
    return TITLE.format(count=count, s="" if count == 1 else "s", name=name)


def body(name: str, plan: SweepPlan, base_sha: str) -> str:
    files = ", ".join(f"`{path}`" for path in sorted(plan.edits))
    parts = [INTRO.format(name=name, files=files), TABLE_HEAD + "\n" + _rows(plan.moves)]
    if plan.excluded:
        rows = [
            EXCLUDED_ROW.format(key=step.key, file=step.file, reason=reason)
            for step, reason in plan.excluded
        ]
        parts.append(EXCLUDED_HEAD + "\n" + "\n".join(rows))
    parts += [PROVED.format(base7=short(base_sha)), MARKER.format(name=name)]
    return "\n\n".join(parts)


def commit_message(name: str, plan: SweepPlan, digest: str) -> str:
    moved = [f"- {move.before.key} ({move.before.file})" for move in plan.moves]
    trailers = f"{TRAILER_MIGRATION}: {name}\n{TRAILER_EDITS}: {digest}"
    return "\n\n".join([title(name, plan), "\n".join(moved), trailers]) + "\n"


def not_proven(plan: SweepPlan) -> str:
    if plan.others_changed:
        return REASON_NOT_PROVEN.format(others=", ".join(f"`{k}`" for k in plan.others_changed))
    lost = [move.before.key for move in plan.moves if move.after is None]
    return REASON_LOST_STEPS.format(keys=", ".join(f"`{key}`" for key in lost))


def _rows(moves: tuple[Move, ...]) -> str:
    return "\n".join(routing_row(m.before.key, m.before, m.after) for m in moves)
