"""What one pin's sync does, decided from what it read: no I/O here.

``bump._sync_pin_locked`` reads, decides, then writes. The reads come in two
rounds so that a sync asks GitHub nothing more than it did when the reads and
the decisions were interleaved: ``decide_first`` needs only the facts every sync
reads (the pin's file, upstream, the bump branch's PRs, the pause record); when it
says ``LOOK_FURTHER`` the sync reads whose the branch is, whether the bot's PR
still merges (only when ``asks_mergeable`` says so) and the landing cooldown, and
``decide`` ends it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.config.models import PinConfig
from bot.github.changes import BranchHead
from bot.pins import text as bump_text
from bot.pins.facts import PinFacts, chosen_target
from bot.pins.ownership import closed_by_human_for
from bot.pins.push import resumable
from bot.pins.state import PinState
from bot.pins.tags import downgrade, moved_tag

MAX_PUSHES_PER_TARGET = 3  # like AutoRoll: at most 3 changes to the same revision

REASON_PAUSED_IN_CONFIG = "paused in config"
REASON_PAUSED_BY = "paused by @{by}"
REASON_THROTTLED = (
    "the bot already pushed {count} times for upstream {target7}; it waits for a new "
    "upstream commit (or `@bot recreate`) rather than keep rebuilding"
)
REASON_COOLDOWN = "a bump of this pin landed a moment ago; waiting out the cooldown"
REASON_CLOSED_BY_HUMAN = "#{number} was closed without merging for {target7}"


class Action(enum.StrEnum):
    PAUSE = "pause"  # paused in config or by a command: nothing written
    REFUSE = "refuse"  # a tag pin's target moved or is a downgrade
    CLOSE = "close"  # the pin is at its target: close the bot's PR if one is open
    LOOK_FURTHER = "look-further"  # read whose the branch is, then ``decide``
    LEAVE_HUMAN = "leave-human"  # a human's branch: say so once, never force-push
    ALREADY_THERE = "already-there"  # the bot's PR is at the target
    SKIP = "skip"  # a human closed the PR for this very target
    THROTTLE = "throttle"  # pushed too often for one upstream commit
    COOLDOWN = "cooldown"  # a bump of this pin landed a moment ago
    BUMP = "bump"  # compare, edit, push, then open or update the PR


@dataclass(frozen=True)
class Decision:
    action: Action
    target: str  # the upstream commit or tag the pin should be at
    reason: str = ""  # why, for the result's detail (empty where the writes say it)
    pr: int | None = None  # the PR the result names


@dataclass(frozen=True, kw_only=True)
class FirstFacts:
    """What every sync of a pin reads before its first decision."""

    pin: PinConfig
    state: PinState
    facts: PinFacts
    paused: Mapping[str, Any] | None  # the pause record a `pause` command left


@dataclass(frozen=True, kw_only=True)
class Facts(FirstFacts):
    """Everything ``decide`` needs: the first facts and the second round of reads."""

    target: str  # what ``decide_first`` said the pin should be at
    owner: str | None  # the upstream target of the open PR if the branch is the bot's
    conflicted: bool  # the bot's PR no longer merges (read only when asks_mergeable)
    base: BranchHead  # the default branch head the sync works against
    now: float
    cooldown_ends: float  # 0: no cooldown


def decide_first(first: FirstFacts) -> Decision:
    """Pause, refuse, close as current, or look further."""
    pin, state, facts = first.pin, first.state, first.facts
    chosen = chosen_target(state, facts.head)
    target = facts.head if chosen is None else chosen
    open_number = _number(facts.open_pr)
    if pin.paused:
        return Decision(Action.PAUSE, target, REASON_PAUSED_IN_CONFIG, open_number)
    if first.paused is not None:
        by = first.paused.get("by")
        return Decision(Action.PAUSE, target, REASON_PAUSED_BY.format(by=by), open_number)
    refused = _tag_refused(pin, state, facts, target)
    if refused is not None:
        return Decision(Action.REFUSE, target, refused, open_number)
    if facts.pinned == target:
        return Decision(Action.CLOSE, target, pr=open_number)
    return Decision(Action.LOOK_FURTHER, target, pr=open_number)


def asks_mergeable(first: FirstFacts, owner: str | None, target: str, base: BranchHead) -> bool:
    """Whether ``decide`` needs to know if the bot's PR still merges: only when the PR is
    the bot's, already at the target, and the base moved since it was built."""
    state, facts = first.state, first.facts
    return (
        facts.open_pr is not None
        and owner == target
        and state.source == facts.pinned
        and state.intent is None
        and state.extra.get("base") != base.sha
    )


def decide(facts: Facts) -> Decision:
    """After ``LOOK_FURTHER``: leave a human's branch, stay, skip, wait, or bump."""
    state, read, target = facts.state, facts.facts, facts.target
    open_pr = read.open_pr
    open_number = _number(open_pr)
    if open_pr is not None and facts.owner is None:
        return Decision(Action.LEAVE_HUMAN, target, pr=open_number)
    if (
        facts.owner == target
        and state.source == read.pinned
        and state.intent is None
        and not facts.conflicted
    ):
        return Decision(Action.ALREADY_THERE, target, pr=open_number)
    newest = read.pulls[0] if read.pulls else None
    if open_pr is None and newest is not None and closed_by_human_for(newest, target, state):
        number = int(newest["number"])
        reason = REASON_CLOSED_BY_HUMAN.format(number=number, target7=target[:7])
        return Decision(Action.SKIP, target, reason, number)
    pushes = int((state.extra.get("pushes") or {}).get(target, 0))
    if pushes >= MAX_PUSHES_PER_TARGET and resumable(state, target, read, facts.base) is None:
        reason = REASON_THROTTLED.format(count=pushes, target7=bump_text.short(target))
        return Decision(Action.THROTTLE, target, reason, open_number)
    if facts.now < facts.cooldown_ends:
        return Decision(Action.COOLDOWN, target, REASON_COOLDOWN, open_number)
    return Decision(Action.BUMP, target, pr=open_number)


def _tag_refused(pin: PinConfig, state: PinState, facts: PinFacts, target: str) -> str | None:
    """Why a tag pin must not move to ``target``: a tag moved, or it is a downgrade."""
    if facts.tags is None:
        return None
    moved = moved_tag(pin, state, facts.tags, facts.pinned, target)
    return moved or downgrade(pin, facts.pinned, target)


def _number(pr: Mapping[str, Any] | None) -> int | None:
    return int(pr["number"]) if pr is not None else None
