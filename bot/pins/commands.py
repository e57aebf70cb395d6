"""`@bot bump PIN [--to SHA|TAG]`, `@bot recreate`, `@bot pause PIN`, `@bot resume PIN`.

Each command changes what the bot remembers (a pause, a chosen target, who
owns a branch) and then runs the same level-triggered sync as a webhook would,
so a command never takes a path the reconcile loop does not also take.
"""

from __future__ import annotations

import re
from typing import Any

import gidgethub

from bot.comments.grammar import BUMP, PAUSE, RECREATE, RESUME, Command
from bot.config.models import PinConfig
from bot.context.scope import RepoScope
from bot.github import changes
from bot.github.changes import Repo
from bot.pins import bump
from bot.pins import text as bump_text
from bot.pins.facts import PruneReplay
from bot.pins.selection import Selection
from bot.pins.state import Outcome, PinResult, PinState
from bot.pins.tags import list_tags
from bot.pins.versions import newest, why_not_a_version
from bot.store.kinds import Kind, pin_key

REPLY_UNKNOWN_PIN = "there is no pin named `{pin}` (pins: {pins})"
REPLY_BAD_SHA = "`--to` needs a commit sha (7 to 40 hex digits), got `{value}`"
REPLY_UNKNOWN_TAG = "`{tag}` is not a tag of `{upstream}`"
REPLY_NOT_A_VERSION = "`{tag}` is not a release tag the bot can order: {why}"
REPLY_NOT_ON_BRANCH = "`{sha}` is not a commit on `{upstream}@{branch}` (compare says {status})"
REPLY_NOT_A_BUMP_PR = "`recreate` works on a bump PR (branch `followup-bot/bump/<pin>`) only"
REPLY_PAUSED = (
    "Paused `{pin}`: the bot keeps reading it but changes nothing until `@{handle} resume {pin}`."
)
REPLY_ALREADY_PAUSED = "`{pin}` was already paused (by @{by})."
REPLY_RESUMED = "Resumed `{pin}`: {result}"
REPLY_NOT_PAUSED = "`{pin}` was not paused. {result}"
REPLY_SYNCED = "`{pin}`: {result}"
RESULTS = {
    Outcome.CREATED: "opened #{pr}: {detail}",
    Outcome.UPDATED: "updated #{pr}: {detail}",
    Outcome.UNCHANGED: "#{pr} is already up to date ({detail})",
    Outcome.CURRENT: "nothing to roll ({detail})",
    Outcome.CLOSED: "closed #{pr}: {detail}",
}

_SHA = re.compile(r"[0-9a-f]{7,40}")


def describe(result: PinResult) -> str:
    template = RESULTS.get(result.outcome, "{outcome}: {detail}")
    return template.format(pr=result.pr, detail=result.detail, outcome=result.outcome.value)


async def run_pin_command(
    ctx: RepoScope,
    command: Command,
    *,
    login: str,
    pull: dict[str, Any] | None,
    replay_prunes: PruneReplay | None = None,
) -> str:
    """Carry out one pin command (the caller checked permission); returns the reply.
    ``replay_prunes``: as ``bump.sync_repo`` takes it."""
    if command.name == RECREATE:
        return await _recreate(ctx, pull, replay_prunes)
    name = command.args[0]
    pin = ctx.config.pin(name)
    if pin is None:
        pins = ", ".join(f"`{p.name}`" for p in ctx.config.pins) or "none"
        return REPLY_UNKNOWN_PIN.format(pin=name, pins=pins)
    key = pin_key(ctx.repo.full_name, pin.name)
    if command.name == PAUSE:
        paused = await ctx.store.get_state(Kind.PAUSE, key)
        if paused is not None:
            return REPLY_ALREADY_PAUSED.format(pin=pin.name, by=paused.get("by"))
        await ctx.store.put_state(Kind.PAUSE, key, {"by": login, "at": ctx.clock()})
        return REPLY_PAUSED.format(pin=pin.name, handle=ctx.config.handle)
    if command.name == RESUME:
        was_paused = await ctx.store.get_state(Kind.PAUSE, key) is not None
        await ctx.store.delete_state(Kind.PAUSE, key)
        result = describe(await _sync(ctx, pin.name, replay_prunes))
        template = REPLY_RESUMED if was_paused else REPLY_NOT_PAUSED
        return template.format(pin=pin.name, result=result)
    assert command.name == BUMP
    to = command.options.get("to")
    if isinstance(to, str):
        problem = await _choose_target(ctx, pin.name, to)
        if problem is not None:
            return problem
    return REPLY_SYNCED.format(
        pin=pin.name, result=describe(await _sync(ctx, pin.name, replay_prunes))
    )


async def _choose_target(ctx: RepoScope, name: str, to: str) -> str | None:
    """Remember a maintainer's chosen upstream commit, if it is on the tracked branch."""
    pin = ctx.config.pin(name)
    assert pin is not None
    if pin.track == "tags":
        return await _choose_tag(ctx, pin, to)
    if not _SHA.fullmatch(to.lower()):
        return REPLY_BAD_SHA.format(value=to)
    upstream = Repo.parse(pin.upstream)
    head = await changes.ref_sha(ctx.gh, upstream, pin.branch)
    try:
        comparison = await ctx.gh.getitem(
            "/repos/{owner}/{repo}/compare/{basehead}",
            url_vars=upstream.vars(basehead=f"{to.lower()}...{head}"),
        )
        status = str(comparison["status"])
        target = str(comparison["base_commit"]["sha"])
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) != 404:
            raise
        status, target = "not found", ""
    if status not in ("ahead", "identical"):
        return REPLY_NOT_ON_BRANCH.format(
            sha=to, upstream=pin.upstream, branch=pin.branch, status=status
        )
    await _remember_choice(ctx, pin, target, head)
    return None


async def _choose_tag(ctx: RepoScope, pin: PinConfig, tag: str) -> str | None:
    """Remember a maintainer's chosen release tag, if upstream has it and it is a version
    (the sync refuses it if it is older than the pin)."""
    upstream = Repo.parse(pin.upstream)
    tags = await list_tags(ctx.gh, upstream)
    if tag not in tags:
        return REPLY_UNKNOWN_TAG.format(tag=tag, upstream=pin.upstream)
    why = why_not_a_version(tag)
    if why is not None:
        return REPLY_NOT_A_VERSION.format(tag=tag, why=why)
    head = newest(tags, pin.tags, prereleases=pin.prereleases)
    await _remember_choice(ctx, pin, tag, tag if head is None else head.tag)
    return None


async def _remember_choice(ctx: RepoScope, pin: PinConfig, target: str, head: str | None) -> None:
    """The target stands while upstream's head (branch head or newest tag) is ``head``."""
    key = pin_key(ctx.repo.full_name, pin.name)
    async with ctx.locks.hold(key):
        state = PinState.load(await ctx.store.get_state(Kind.BUMP, key))
        state.extra["manual"] = {"target": target, "while_head": head}
        await ctx.store.put_state(Kind.BUMP, key, state.dump())


async def _recreate(
    ctx: RepoScope, pull: dict[str, Any] | None, replay_prunes: PruneReplay | None
) -> str:
    branch = str((pull or {}).get("head", {}).get("ref") or "")
    pin = ctx.config.pin(branch.removeprefix(bump_text.BRANCH_PREFIX))
    if pull is None or not branch.startswith(bump_text.BRANCH_PREFIX) or pin is None:
        return REPLY_NOT_A_BUMP_PR
    key = pin_key(ctx.repo.full_name, pin.name)
    async with ctx.locks.hold(key):
        state = PinState.load(await ctx.store.get_state(Kind.BUMP, key))
        # Adopt the branch as the bot's again (its head is "ours") and forget what
        # it was built for ("" is no upstream commit), so the sync rebuilds it.
        state.head, state.target, state.source = str(pull["head"]["sha"]), "", None
        state.human_push_notified = False
        state.extra.pop("pushes", None)
        await ctx.store.put_state(Kind.BUMP, key, state.dump())
    return REPLY_SYNCED.format(
        pin=pin.name, result=describe(await _sync(ctx, pin.name, replay_prunes))
    )


async def _sync(ctx: RepoScope, name: str, replay_prunes: PruneReplay | None) -> PinResult:
    results = await bump.sync_repo(ctx, select=Selection.of_pin(name), replay_prunes=replay_prunes)
    return results[0]
