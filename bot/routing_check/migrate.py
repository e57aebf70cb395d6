"""One PR per configured migration, level-triggered: the sweep proposed, kept current, closed.

Each reconcile tick reads the generator's files at the default branch head, plans each
migration's sweep (``sweep.plan_sweep``) and makes only the writes needed: a PR on
``followup-bot/migrate/<name>`` with one commit of every edited job file, updated in
place when the edits change as main moves, left alone when the branch already holds
them, closed once nothing is left to move. A sweep that would also reroute steps it
did not select is not proposed at all: the reason is recorded, nothing is written.

The writes (intent, branch, PR, comments) live in ``migrate_pr``, the wording in
``migrate_text``. Landing a migration PR is not this module's business.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from bot.config.routing import MigrationConfig, RoutingConfig
from bot.context.scope import RepoScope
from bot.github import changes
from bot.github.changes import BranchHead
from bot.github.ci_files import read_inputs
from bot.github.default_branch import default_branch_head
from bot.routing.repo_tables import tables_of
from bot.routing_check import migrate_text as text
from bot.routing_check.migrate_pr import (
    MigrationResult,
    MigrationState,
    Outcome,
    Sweep,
    close_done,
    human_owned,
    open_pull,
    owned,
    push_sweep,
)
from bot.routing_check.snapshot import record_routing
from bot.routing_check.sweep import SweepPlan, plan_sweep
from bot.store.kinds import Kind, migration_key

log = logging.getLogger(__name__)

__all__ = ["MigrationResult", "Outcome", "reconcile_migrations", "sync_migrations"]


async def reconcile_migrations(ctx: RepoScope) -> list[MigrationResult]:
    """The reconcile tick's entry: main's routing recorded for the dashboard, then every
    migration, against the default branch's head now."""
    base = await default_branch_head(ctx.gh, ctx.store, ctx.repo, refresh=True)
    routing = ctx.config.routing or RoutingConfig()
    files = await read_inputs(ctx.gh, ctx.repo, base.sha, routing.ci_config, ctx.cache)
    await record_routing(ctx, base, files, routing)
    return await sync_migrations(ctx, base=base, files=files)


async def sync_migrations(
    ctx: RepoScope, *, base: BranchHead, files: Mapping[str, str]
) -> list[MigrationResult]:
    """Bring each configured migration's PR to its desired state on ``base``, whose
    generator files are ``files``."""
    if not ctx.config.migrations:
        return []
    # Main's own build decides where main's steps run, so the sweep is planned as main.
    env = {"BUILDKITE_BRANCH": base.name}
    tables = tables_of(ctx.config.routing or RoutingConfig())
    results = []
    for migration in ctx.config.migrations:
        plan = await ctx.blocking.run(plan_sweep, files, migration, env=env, tables=tables)
        results.append(await _sync_one(ctx, base, migration, plan))
    return results


async def _sync_one(
    ctx: RepoScope, base: BranchHead, migration: MigrationConfig, plan: SweepPlan
) -> MigrationResult:
    key = migration_key(ctx.repo, migration.name)
    sweep = Sweep(migration.name, plan, base, text.edits_digest(plan.edits))
    async with ctx.locks.hold(key):
        state = MigrationState.load(await ctx.store.get_state(Kind.MIGRATION, key))
        result = await _decide(ctx, sweep, state)
        state.last_result = result.outcome.value
        state.steps_left = len(plan.moves)
        state.last_failure = result.detail if result.outcome is Outcome.FAILED else None
        await ctx.store.put_state(Kind.MIGRATION, key, state.dump())
    level = logging.WARNING if result.outcome is Outcome.FAILED else logging.INFO
    log.log(level, "%s: migration %s", key, result.outcome.value)
    return result


async def _decide(ctx: RepoScope, sweep: Sweep, state: MigrationState) -> MigrationResult:
    pulls = await changes.pulls_for_branch(ctx.gh, ctx.repo, sweep.branch)
    open_pr = next((pr for pr in pulls if pr["state"] == "open"), None)
    mine = open_pr is not None and await owned(ctx, sweep, state, open_pr)
    if not sweep.plan.moves:
        if open_pr is None or not mine:  # a human's PR is theirs to close
            return MigrationResult(sweep.name, Outcome.NOTHING_TO_MOVE, "", _number(open_pr))
        return await close_done(ctx, sweep, state, open_pr)
    if not sweep.plan.proven:
        return MigrationResult(
            sweep.name, Outcome.FAILED, text.not_proven(sweep.plan), _number(open_pr)
        )
    if open_pr is not None and not mine:
        return await human_owned(ctx, sweep, open_pr)
    if (
        open_pr is not None
        and state.intent is None
        and state.head == open_pr["head"]["sha"]
        and state.digest == sweep.digest
    ):
        return MigrationResult(sweep.name, Outcome.UNCHANGED, "", _number(open_pr))
    if open_pr is None and _closed_by_human(pulls, state, sweep.digest):
        detail = f"#{state.pr} was closed without merging for these edits"
        return MigrationResult(sweep.name, Outcome.SKIPPED, detail, state.pr)
    return await _push_and_open(ctx, sweep, state, open_pr)


def _closed_by_human(
    pulls: Sequence[Mapping[str, Any]], state: MigrationState, digest: str
) -> bool:
    """Whether the bot's last PR was closed unmerged by a human for these very edits."""
    last = next((pr for pr in pulls if int(pr["number"]) == state.pr), None)
    if last is None or last["state"] != "closed" or last.get("merged_at"):
        return False
    return state.closed_by_bot != state.pr and state.digest == digest


async def _push_and_open(
    ctx: RepoScope, sweep: Sweep, state: MigrationState, open_pr: Mapping[str, Any] | None
) -> MigrationResult:
    sha = await push_sweep(ctx, sweep, state, open_pr)
    title = text.title(sweep.name, sweep.plan)
    body = text.body(sweep.name, sweep.plan, sweep.base.sha)
    if open_pr is not None:
        number = int(open_pr["number"])
        await changes.update_pull(ctx.gh, ctx.repo, number, title=title, body=body)
        outcome = Outcome.UPDATED
    else:
        number = await open_pull(ctx, sweep, sha, title=title, body=body)
        outcome = Outcome.CREATED
    state.head, state.digest, state.pr, state.intent = sha, sweep.digest, number, None
    return MigrationResult(sweep.name, outcome, title, number)


def _number(pr: Mapping[str, Any] | None) -> int | None:
    return int(pr["number"]) if pr is not None else None
