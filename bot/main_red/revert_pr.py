"""The partial revert PR: one step's routing keys put back as they were when it was green.

Built on the default branch's head (not on the culprit: later work stays), from the
step's text in the last green tree. Proved before it is proposed: routed with the edit,
the step gets its last green route back and no other step moves. Written like every
proposal of the bot: a write-ahead intent before the branch moves, one PR per branch,
a branch someone else pushed to left alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from bot.config.routing import RoutingConfig
from bot.edit.yaml_restore import ROUTE_KEYS, StepRestoreError, restore_step_keys
from bot.github import bot_branches, changes
from bot.github.changes import BranchHead, FileEdit
from bot.github.ci_files import read_inputs
from bot.github.default_branch import default_branch_head
from bot.main_red import text
from bot.main_red.state import SignalDoc
from bot.main_red.suspects import Suspects
from bot.routing.model import RoutedStep, route
from bot.routing.repo_tables import tables_of
from bot.routing.rules import derived_key
from bot.service.scope import RepoScope

_ROUTE = ("queue", "plugin", "image_suffix", "gpus", "depends_on")


@dataclass(frozen=True)
class Revert:
    """A proven partial revert, ready to commit."""

    step: str
    culprit: str  # the commit whose route change this reverts
    path: str
    new_text: str
    keys: tuple[str, ...]  # the keys it puts back
    base: BranchHead
    digest: str
    restored: RoutedStep | None


@dataclass(frozen=True)
class RevertOutcome:
    pr: int | None
    note: str | None  # why there is no PR


def _route(step: RoutedStep) -> tuple[object, ...]:
    return tuple(getattr(step, name) for name in _ROUTE)


async def plan_revert(
    ctx: RepoScope, step: str, culprit: str, suspects: Suspects, *, branch: str
) -> Revert | str:
    """The revert on main's head, or why there is none (a note for the issue)."""
    before, after = suspects.before, suspects.after
    if before is None or after is None:
        return text.NOTE_REVERT_NOT_ROUTE
    routing = ctx.config.routing or RoutingConfig()
    base = await default_branch_head(ctx.gh, ctx.store, ctx.repo, refresh=True)
    files = dict(await read_inputs(ctx.gh, ctx.repo, base.sha, routing.ci_config, ctx.cache))
    current = files.get(after.file)
    green = suspects.green_files.get(before.file)
    if current is None or green is None:
        return text.NOTE_REVERT_GONE.format(file=after.file, head7=base.sha[:7])
    try:
        new = await ctx.blocking.run(
            restore_step_keys, current, green, step=step, keys=ROUTE_KEYS, filename=after.file
        )
    except StepRestoreError as exc:
        return str(exc)
    tables = tables_of(routing)
    env = {"BUILDKITE_BRANCH": branch, "BUILDKITE_COMMIT": base.sha}
    old_routes = await ctx.blocking.run(route, files, env=env, tables=tables)
    new_routes = await ctx.blocking.run(route, {**files, after.file: new}, env=env, tables=tables)
    restored = next((s for s in new_routes.steps if s.key == step), None)
    if restored is None or _route(restored) != _route(before):
        return text.NOTE_REVERT_NOT_ROUTE
    old = {s.key: _route(s) for s in old_routes.steps}
    moved = sorted(s.key for s in new_routes.steps if s.key != step and old.get(s.key) != _route(s))
    if moved:
        return text.NOTE_REVERT_MOVES_OTHERS.format(keys=", ".join(f"`{k}`" for k in moved))
    digest = text.edits_digest(after.file, new)
    return Revert(
        step, culprit, after.file, new, restored_keys(current, new, step), base, digest, restored
    )


def restored_keys(old: str, new: str, step: str) -> tuple[str, ...]:
    """The routing keys of ``step`` whose values the restore changed (the PR names them)."""
    before, after = _step_fields(old, step), _step_fields(new, step)
    return tuple(key for key in ROUTE_KEYS if before.get(key) != after.get(key))


def _step_fields(text: str, step: str) -> dict[str, Any]:
    """The mapping of the step keyed (or labelled) ``step`` anywhere in a job file."""
    pending: list[Any] = [yaml.safe_load(text)]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            label = node.get("label")
            if node.get("key") == step or (
                "key" not in node and isinstance(label, str) and derived_key(label) == step
            ):
                return node
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return {}


async def propose(
    ctx: RepoScope,
    revert: Revert,
    doc: SignalDoc,
    *,
    title: str,
    body: str,
    save: Callable[[SignalDoc], Awaitable[None]],
) -> RevertOutcome:
    """Put the revert commit on ``followup-bot/revert/<step>`` and open its PR once."""
    branch = text.revert_branch(revert.step)
    pulls = await changes.pulls_for_branch(ctx.gh, ctx.repo, branch)
    open_pr = next((pr for pr in pulls if pr["state"] == "open"), None)
    if open_pr is not None and str(open_pr["head"]["sha"]) == doc.revert_head:
        return RevertOutcome(int(open_pr["number"]), None)
    if open_pr is not None and not await _ours(ctx, revert, doc, open_pr):
        return RevertOutcome(None, text.NOTE_REVERT_HUMAN.format(branch=branch))
    resumed = bot_branches.resumable(doc.revert_intent, digest=revert.digest, base=revert.base.sha)
    if resumed is None:
        sha = await _commit(ctx, revert)
        # Recorded before the branch moves: a rerun finishes with this very commit.
        doc.revert_intent = {"sha": sha, "base": revert.base.sha, "digest": revert.digest}
        await save(doc)
    sha = str((doc.revert_intent or {})["sha"])
    await bot_branches.move_branch(
        ctx.gh, ctx.repo, branch, sha, open_pr, resumed=resumed is not None
    )
    if open_pr is not None:
        number = int(open_pr["number"])
        await changes.update_pull(ctx.gh, ctx.repo, number, title=title, body=body)
    else:
        number = await bot_branches.open_pull(
            ctx.gh, ctx.repo, branch=branch, base=revert.base.name, sha=sha, title=title, body=body
        )
    doc.revert_pr, doc.revert_head, doc.revert_intent = number, sha, None
    return RevertOutcome(number, None)


async def _ours(ctx: RepoScope, revert: Revert, doc: SignalDoc, open_pr: Mapping[str, Any]) -> bool:
    head = str(open_pr["head"]["sha"])
    if head == (doc.revert_intent or {}).get("sha"):
        return True
    trailers = await bot_branches.bots_commit_trailers(ctx.gh, ctx.repo, head, ctx.bot_login)
    return trailers is not None and trailers.get(text.TRAILER_REVERT) == revert.step


async def _commit(ctx: RepoScope, revert: Revert) -> str:
    entries = await changes.tree_entries(
        ctx.gh, ctx.repo, [FileEdit(revert.path, revert.new_text.encode())]
    )
    message = text.revert_commit_message(revert.step, revert.culprit, revert.keys, revert.digest)
    commit = await changes.commit_tree(
        ctx.gh, ctx.repo, base=revert.base, entries=entries, message=message
    )
    return commit.sha
