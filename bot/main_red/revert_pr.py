"""The partial revert PR: one step's routing keys put back as they were when it was green.

Built on the default branch's head (not on the culprit: later work stays), from the
step's text in the last green tree. Proved before it is proposed: routed with the edit,
the step gets its last green route back and no other step moves. A key the step inherits
from its file's top level (``depends_on``) is put back there first; when that would
re-route other steps of the file, the green value is written on the step itself instead.
Written like every proposal of the bot: a write-ahead intent before the branch moves, one
PR per branch, a branch someone else pushed to left alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from bot.config.routing import RoutingConfig
from bot.context.scope import RepoScope
from bot.edit.yaml_restore import FILE_KEYS, ROUTE_KEYS, StepRestoreError, restore_step_keys
from bot.github import bot_branches, changes
from bot.github.changes import BranchHead, FileEdit
from bot.github.ci_files import read_inputs
from bot.github.default_branch import default_branch_head
from bot.main_red import text
from bot.main_red.state import SignalDoc
from bot.main_red.suspects import Suspects
from bot.routing.model import RoutedStep, Routes, route
from bot.routing.repo_tables import tables_of
from bot.routing.rules import derived_key
from bot.routing.tables import RoutingTables

_ROUTE = ("queue", "plugin", "image_suffix", "gpus", "depends_on")


@dataclass(frozen=True)
class Revert:
    """A proven partial revert, ready to commit."""

    step: str
    culprit: str  # the commit whose route change this reverts
    path: str
    new_text: str
    keys: tuple[str, ...]  # the keys it puts back, as the step reads them
    base: BranchHead
    digest: str
    restored: RoutedStep | None
    file_keys: tuple[str, ...] = ()  # ... of which put back at the top of the file


@dataclass(frozen=True)
class Proven:
    """A restored text routed: the step as it routes with it, if that is its last green
    route, and the other steps it would re-route."""

    text: str
    restored: RoutedStep | None
    moved: tuple[str, ...]


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
    env = {"BUILDKITE_BRANCH": branch, "BUILDKITE_COMMIT": base.sha}
    try:
        proven = await ctx.blocking.run(
            prove_revert,
            files,
            after.file,
            green,
            step=step,
            before=before,
            env=env,
            tables=tables_of(routing),
        )
    except StepRestoreError as exc:
        return str(exc)
    if proven.restored is None:
        return text.NOTE_REVERT_NOT_ROUTE
    if proven.moved:
        return text.NOTE_REVERT_MOVES_OTHERS.format(keys=", ".join(f"`{k}`" for k in proven.moved))
    new = proven.text
    return Revert(
        step,
        culprit,
        after.file,
        new,
        restored_keys(current, new, step),
        base,
        text.edits_digest(after.file, new),
        proven.restored,
        restored_file_keys(current, new),
    )


def prove_revert(
    files: Mapping[str, str],
    path: str,
    green: str,
    *,
    step: str,
    before: RoutedStep,
    env: Mapping[str, str],
    tables: RoutingTables,
) -> Proven:
    """``files[path]`` with the step's routing keys as in ``green``, routed.

    A key the step inherits goes back to the top of the file first; if that re-routes
    other steps (they inherit it too), the step gets the green value as its own.
    ``StepRestoreError`` when the text cannot be restored.
    """
    current = files[path]
    old = route(files, env=env, tables=tables)

    def attempt(file_level: bool) -> Proven:
        new = restore_step_keys(
            current, green, step=step, keys=ROUTE_KEYS, filename=path, file_level=file_level
        )
        routes = route({**files, path: new}, env=env, tables=tables)
        return _proven(new, old, routes, step, before)

    proven = attempt(file_level=True)
    if proven.moved and restored_file_keys(current, proven.text):
        proven = attempt(file_level=False)
    return proven


def _proven(new: str, old: Routes, routes: Routes, step: str, before: RoutedStep) -> Proven:
    restored = next((s for s in routes.steps if s.key == step), None)
    if restored is not None and _route(restored) != _route(before):
        restored = None
    was = {s.key: _route(s) for s in old.steps}
    moved = sorted(s.key for s in routes.steps if s.key != step and was.get(s.key) != _route(s))
    return Proven(new, restored, tuple(moved))


def restored_keys(old: str, new: str, step: str) -> tuple[str, ...]:
    """The routing keys of ``step`` whose values, as the step reads them (its file's
    ``depends_on`` when it has none), the restore changed (the PR names them)."""
    before, after = _step_fields(old, step), _step_fields(new, step)
    return tuple(key for key in ROUTE_KEYS if before.get(key) != after.get(key))


def restored_file_keys(old: str, new: str) -> tuple[str, ...]:
    """The file-level keys (those steps inherit) the restore changed."""
    before, after = _top(yaml.safe_load(old)), _top(yaml.safe_load(new))
    return tuple(key for key in FILE_KEYS if before.get(key) != after.get(key))


def _top(data: object) -> dict[str, Any]:
    return data if isinstance(data, dict) else {}


def _step_fields(text: str, step: str) -> dict[str, Any]:
    """The fields of the step keyed (or labelled) ``step`` anywhere in a job file, with
    the file's keys it inherits (a step of the top-level ``steps`` without its own)."""
    data = yaml.safe_load(text)
    inherited = {k: v for k, v in _top(data).items() if k in FILE_KEYS and v}
    pending: list[tuple[Any, dict[str, Any]]] = [(data, {})]
    while pending:
        node, file_keys = pending.pop()
        if isinstance(node, dict):
            label = node.get("label")
            if node.get("key") == step or (
                "key" not in node and isinstance(label, str) and derived_key(label) == step
            ):
                return {**node, **{k: v for k, v in file_keys.items() if not node.get(k)}}
            top_steps = node is data and isinstance(node.get("steps"), list)
            for key, value in node.items():
                pending.append((value, inherited if top_steps and key == "steps" else {}))
        elif isinstance(node, list):
            pending.extend((item, file_keys) for item in node)
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
    body = with_file_keys(body, revert)
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


def with_file_keys(body: str, revert: Revert) -> str:
    """``body`` saying which file-level keys the revert puts back (the keys it names are
    the step's): a paragraph before its closing marker."""
    if not revert.file_keys:
        return body
    keys = ", ".join(f"`{key}`" for key in revert.file_keys)
    paragraph = text.REVERT_FILE_KEYS.format(keys=keys, file=revert.path)
    head = body.removesuffix(text.MARKER_REVERT.format(step=revert.step))
    return head + paragraph + "\n\n" + body[len(head) :]


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
