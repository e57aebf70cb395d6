"""Keep exactly one bump PR per pin, level-triggered: the sync and its decisions.

``sync_repo`` reads the current state (config, upstream head, pinned value,
the PR on the deterministic branch) and makes only the writes needed to reach
the desired state. A push webhook and a reconcile tick both just call it, so a
missed webhook is healed by the next tick and a redelivery writes nothing.

A pin's sync reads first, then ``decision`` (pure) says what to do and why, then
this module makes the writes; which pins a sync looks at is a ``selection``. The
other pieces live beside it: what a sync reads (``facts``), what the bot remembers
and what a sync ends in (``state``), whose the branch is (``ownership``), upstream
history rewritten under a PR (``rewritten``), where a pin off the tracked branch
still is (``off_branch``), the commit, write-ahead intent and branch move
(``push``), the PR opened or closed (``pull``), release notes published after it
(``release_notes``) and what the dashboard shows (``snapshot``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import Any

from bot.config.models import PinConfig
from bot.context.scope import RepoScope
from bot.edit.cmake_pin import PinError, set_pin
from bot.github import changes
from bot.github.changes import FileEdit, Repo
from bot.github.default_branch import default_branch_head
from bot.pins import decision, off_branch, release_notes
from bot.pins import text as bump_text
from bot.pins.companions import check_companions, companion_edits
from bot.pins.decision import Action, Decision, Facts
from bot.pins.facts import (
    BumpScope,
    PinFacts,
    PruneReplay,
    compare,
    forget_pulls,
    newest_commits,
    prefetch_pulls,
    read_facts,
    target_of,
)
from bot.pins.ownership import human_owned, ownership
from bot.pins.pull import close_not_needed, open_pull
from bot.pins.push import push_bump
from bot.pins.rewritten import bots_target, left_branch, rewritten
from bot.pins.selection import Selection
from bot.pins.snapshot import commit_time, snapshot
from bot.pins.state import SUCCESSES, Outcome, PinResult, PinState
from bot.pins.tags import release_url, remember_tags
from bot.store.kinds import Kind, pin_key

log = logging.getLogger(__name__)

EVERY_PIN = Selection.every()

REASON_UNKNOWN_PIN = (
    "pinned {value!r} is not known to {upstream} (compare answered 404); "
    "the bot will not guess a bump"
)


async def sync_repo(
    scope: RepoScope,
    *,
    select: Selection = EVERY_PIN,
    refresh: bool = False,
    head_by_compare: bool = False,
    replay_prunes: PruneReplay | None = None,
) -> list[PinResult]:
    """Bring every selected pin of the scope's repository to its desired state.

    ``refresh`` re-reads the repository's default branch (the reconcile tick
    does; a webhook uses the remembered one, saving a round trip).
    ``head_by_compare`` reads branch pins' upstream heads off their compares (an
    upstream push, after which every such pin compares anyway).
    """
    base = await default_branch_head(scope.gh, scope.store, scope.repo, refresh=refresh)
    pins = [pin for pin in scope.config.pins if select.matches(pin)]
    if not pins:
        return []
    shared = {field.name: getattr(scope, field.name) for field in dataclasses.fields(RepoScope)}
    ctx = BumpScope(
        **shared, base=base, head_by_compare=head_by_compare, replay_prunes=replay_prunes
    )
    await prefetch_pulls(ctx, pins)
    return list(await asyncio.gather(*(sync_pin(ctx, pin) for pin in pins)))


async def sync_pin(ctx: BumpScope, pin: PinConfig) -> PinResult:
    key = pin_key(ctx.repo.full_name, pin.name)
    async with ctx.locks.hold(key):
        found = await ctx.store.get_state(Kind.BUMP, key)
        state = PinState.load(found)
        before = _unstamped(state.dump())
        try:
            result = await _sync_pin_locked(ctx, pin, state)
        finally:
            # Whatever the sync wrote (or began to, when it failed), a later sync of this
            # pin in the same delivery must read the branch's PRs afresh.
            forget_pulls(ctx, pin)
        state.last_result = result.outcome.value
        if result.outcome in SUCCESSES:
            state.last_failure = None  # the dashboard shows problems that still stand
        if result.outcome is Outcome.FAILED:
            state.last_failure = result.detail
            log.warning("%s: %s", key, result.detail)
        else:
            log.info("%s: %s %s", key, result.outcome.value, result.detail)
        # An idle tick writes nothing: the record is kept only when the sync changed it.
        if found is None or _unstamped(state.dump()) != before:
            state.extra["updated_at"] = ctx.clock()
            await ctx.store.put_state(Kind.BUMP, key, state.dump())
        return result


def _unstamped(doc: Mapping[str, Any]) -> str:
    """A pin's record without its time, as JSON (what a sync may have changed)."""
    return json.dumps({k: v for k, v in doc.items() if k != "updated_at"}, sort_keys=True)


async def _sync_pin_locked(ctx: BumpScope, pin: PinConfig, state: PinState) -> PinResult:
    facts = await read_facts(ctx, pin)
    if isinstance(facts, PinResult):
        return facts
    await _record_companions(ctx, pin, state, facts)
    paused = await ctx.store.get_state(Kind.PAUSE, pin_key(ctx.repo.full_name, pin.name))
    first = decision.FirstFacts(pin=pin, state=state, facts=facts, paused=paused)
    decided = decision.decide_first(first)
    if decided.action is not Action.PAUSE:
        target_of(state, facts.head)  # forgets a maintainer's choice upstream moved past
    if decided.action is Action.LOOK_FURTHER:
        decided = decision.decide(await _further_facts(ctx, first, decided.target))
    return await _carry_out(ctx, pin, state, facts, decided)


async def _further_facts(ctx: BumpScope, first: decision.FirstFacts, target: str) -> Facts:
    """The second round of reads: whose the branch is, whether the bot's PR still merges
    (asked only when that decides anything) and when the landing cooldown ends."""
    open_pr = first.facts.open_pr
    owner = await ownership(ctx, first.pin, first.state, open_pr)
    asks = decision.asks_mergeable(first, owner, target, ctx.base)
    return Facts(
        pin=first.pin,
        state=first.state,
        facts=first.facts,
        paused=first.paused,
        target=target,
        owner=owner,
        conflicted=asks and open_pr is not None and await _conflicted(ctx, open_pr),
        base=ctx.base,
        now=ctx.clock(),
        cooldown_ends=await _cooldown_ends(ctx, first.pin),
    )


async def _carry_out(
    ctx: BumpScope, pin: PinConfig, state: PinState, facts: PinFacts, decided: Decision
) -> PinResult:
    """The writes (if any) of what was decided, and the result the sync ends in."""
    action, target, pr = decided.action, decided.target, decided.pr
    if action is Action.CLOSE:
        return await close_not_needed(
            ctx, pin, state, facts.open_pr, facts.pinned, target, current=True
        )
    if action is Action.LEAVE_HUMAN:
        assert facts.open_pr is not None
        return await human_owned(ctx, pin, state, facts.open_pr, bump_text.bump_branch(pin.name))
    if action is Action.ALREADY_THERE:
        return await _already_there(ctx, pin, state, facts, target)
    if action is Action.BUMP:
        return await _bump(ctx, pin, state, facts, target)
    return PinResult(pin.name, _OUTCOMES[action], decided.reason, pr)


# What a decision without writes ends in.
_OUTCOMES = {
    Action.PAUSE: Outcome.PAUSED,
    Action.REFUSE: Outcome.FAILED,
    Action.SKIP: Outcome.SKIPPED,
    Action.THROTTLE: Outcome.THROTTLED,
    Action.COOLDOWN: Outcome.COOLDOWN,
}


async def _already_there(
    ctx: BumpScope, pin: PinConfig, state: PinState, facts: PinFacts, target: str
) -> PinResult:
    """The bot's PR is at the target: nothing to rebuild, but a tag's release published
    since the PR was opened is linked from it."""
    open_pr = facts.open_pr
    if facts.tags is not None and open_pr is not None:
        noted = await release_notes.add_late_notes(ctx, pin, state, open_pr, target)
        if noted is not None:
            return noted
    detail = f"already at {bump_text.short(target)}"
    return PinResult(pin.name, Outcome.UNCHANGED, detail, _number(open_pr))


async def _record_companions(
    ctx: BumpScope, pin: PinConfig, state: PinState, facts: PinFacts
) -> None:
    """For the dashboard: whether the files that must agree with the pin still do."""
    if pin.also:
        checks = await check_companions(ctx, pin, facts)
        state.extra["companions"] = [dataclasses.asdict(check) for check in checks]


async def _cooldown_ends(ctx: BumpScope, pin: PinConfig) -> float:
    """When the cooldown after this pin's last landed bump ends (0: none)."""
    if ctx.config.landing is None:
        return 0.0
    landed = await ctx.store.get_state(Kind.PIN_COOLDOWN, pin_key(ctx.repo.full_name, pin.name))
    if landed is None or not isinstance(landed.get("landed_at"), int | float):
        return 0.0
    return float(landed["landed_at"]) + ctx.config.landing.cooldown_minutes * 60.0


async def _conflicted(ctx: BumpScope, open_pr: Mapping[str, Any]) -> bool:
    """Whether the bot's bump PR no longer merges cleanly."""
    pull = await ctx.gh.getitem(
        "/repos/{owner}/{repo}/pulls/{number}",
        url_vars=ctx.repo.vars(number=str(open_pr["number"])),
    )
    # None means GitHub is still computing: look again at the next sync.
    return pull.get("mergeable") is False


async def _bump(
    ctx: BumpScope, pin: PinConfig, state: PinState, facts: PinFacts, target: str
) -> PinResult:
    upstream = Repo.parse(pin.upstream)
    open_pr = facts.open_pr
    # Compare and edit before any write: a pin that upstream history no longer reaches,
    # or a companion file out of sync, must end with nothing written, not even a blob.
    try:
        comparison, new_text, also = await asyncio.gather(
            _comparison(ctx, upstream, facts, target),
            ctx.blocking.run(set_pin, facts.text, pin.dependency, target, filename=pin.file),
            companion_edits(ctx, pin, facts, target),
        )
    except PinError as exc:  # e.g. a shallow pin cannot take the commit sha of a branch
        return PinResult(pin.name, Outcome.FAILED, str(exc))
    if comparison is None:
        reason = REASON_UNKNOWN_PIN.format(value=facts.pinned, upstream=pin.upstream)
        return PinResult(pin.name, Outcome.FAILED, reason)
    if isinstance(also, str):
        return PinResult(pin.name, Outcome.FAILED, also, _number(open_pr))
    if facts.tags is None:
        stop = await _branch_moved_away(ctx, pin, state, facts, comparison, target)
        if stop is not None:
            return stop
    commits = comparison.get("commits") or []
    await snapshot(
        ctx,
        pin,
        pinned=facts.pinned,
        upstream_head=facts.head,
        behind=int(comparison.get("ahead_by") or len(commits)),
        oldest=commit_time(commits[0]) if commits else None,
    )
    listed, notes = await asyncio.gather(
        newest_commits(ctx, upstream, facts.pinned, target, comparison),
        _release_url(ctx, upstream, facts, target),
    )
    text_out = bump_text.render(
        pin=pin,
        old=facts.pinned,
        new=target,
        total_commits=int(comparison.get("total_commits") or 0),
        commits=bump_text.parse_compare_commits(listed),
        compare_url=str(comparison["html_url"]),
        release_url=notes,
        also=[edit.path for edit in also],
    )
    edits = [FileEdit(pin.file, new_text.encode("utf-8")), *also]
    result = await _push_and_open(ctx, pin, state, facts, target, edits, text_out)
    if facts.tags is not None:
        release_notes.remember(state, target, notes)
    return result


async def _release_url(ctx: BumpScope, upstream: Repo, facts: PinFacts, target: str) -> str | None:
    """A tag pin's release notes page for ``target`` (None: a branch pin, or none yet)."""
    return await release_url(ctx.gh, upstream, target) if facts.tags else None


async def _comparison(
    ctx: BumpScope, upstream: Repo, facts: PinFacts, target: str
) -> Mapping[str, Any] | None:
    """``pinned...target``: the one read with the head when it is the head (an upstream
    push), else asked now (a tick, or a maintainer's chosen commit)."""
    if facts.comparison is not None and target == facts.head:
        return facts.comparison
    return await compare(ctx.gh, upstream, facts.pinned, target)


async def _branch_moved_away(
    ctx: BumpScope,
    pin: PinConfig,
    state: PinState,
    facts: PinFacts,
    comparison: Mapping[str, Any],
    target: str,
) -> PinResult | None:
    """A branch pin's reason to stop before bumping: upstream rewrote the history under
    the bot's PR, the pin is ahead of upstream, or no longer on its branch at all."""
    open_pr = facts.open_pr
    upstream = Repo.parse(pin.upstream)
    old_target = bots_target(state, open_pr)
    if (
        open_pr is not None
        and old_target is not None
        and await left_branch(ctx, upstream, comparison, old_target, facts.head)
    ):
        return await rewritten(ctx, pin, open_pr, old_target, facts.head)
    status = comparison["status"]
    if status == "behind":
        return await close_not_needed(ctx, pin, state, open_pr, facts.pinned, target, current=False)
    if status != "ahead":
        # Not on the tracked branch: on another live branch, or upstream rewrote history.
        reason = await off_branch.refusal(ctx, pin, state, facts.pinned, target, comparison)
        return PinResult(pin.name, Outcome.FAILED, reason)
    off_branch.forget(state)
    return None


async def _push_and_open(
    ctx: BumpScope,
    pin: PinConfig,
    state: PinState,
    facts: PinFacts,
    target: str,
    edits: list[FileEdit],
    text_out: bump_text.BumpText,
) -> PinResult:
    branch = bump_text.bump_branch(pin.name)
    sha = await push_bump(ctx, pin, state, facts, target, edits=edits, text=text_out, branch=branch)
    open_pr = facts.open_pr
    if open_pr is not None:
        number = int(open_pr["number"])
        await changes.update_pull(
            ctx.gh, ctx.repo, number, title=text_out.title, body=text_out.body
        )
        outcome = Outcome.UPDATED
    else:
        number = await open_pull(ctx, branch, text_out, sha)
        state.human_push_notified = False
        outcome = Outcome.CREATED
    if facts.tags is not None:
        remember_tags(state, facts.tags, facts.pinned, target)
    state.head, state.target, state.source, state.pr = sha, target, facts.pinned, number
    state.pending, state.intent = None, None
    return PinResult(pin.name, outcome, text_out.title, number)


def _number(pr: Mapping[str, Any] | None) -> int | None:
    return int(pr["number"]) if pr is not None else None
