"""One pin's sync decided from what it read (``bot.pins.decision``): every way it ends."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config.models import PinConfig
from bot.github.changes import BranchHead
from bot.pins.decision import (
    MAX_PUSHES_PER_TARGET,
    REASON_CLOSED_BY_HUMAN,
    REASON_COOLDOWN,
    REASON_PAUSED_BY,
    REASON_PAUSED_IN_CONFIG,
    REASON_THROTTLED,
    Action,
    Decision,
    Facts,
    FirstFacts,
    asks_mergeable,
    decide,
    decide_first,
)
from bot.pins.facts import PinFacts
from bot.pins.state import PinState
from bot.pins.tags import REASON_TAG_MOVED, TagChoice, downgrade

PINNED, HEAD, CHOSEN, BASE = "a" * 40, "b" * 40, "c" * 40, "d" * 40
BRANCH_PIN = PinConfig(name="fa", upstream="up/fa", file="f.cmake", dependency="fa")
TAG_PIN = PinConfig(name="fa", upstream="up/fa", track="tags", file="f.cmake", dependency="fa")


def pull(number: int, state: str = "open", **extra: Any) -> dict[str, Any]:
    return {"number": number, "state": state, "head": {"sha": "e" * 40}, **extra}


def first(
    *,
    pin: PinConfig = BRANCH_PIN,
    state: PinState | None = None,
    pinned: str = PINNED,
    head: str = HEAD,
    pulls: list[dict[str, Any]] | None = None,
    tags: TagChoice | None = None,
    paused: dict[str, Any] | None = None,
) -> FirstFacts:
    facts = PinFacts(head=head, pulls=pulls or [], text="", pinned=pinned, tags=tags)
    return FirstFacts(pin=pin, state=state or PinState(), facts=facts, paused=paused)


def further(
    before: FirstFacts,
    *,
    owner: str | None = None,
    conflicted: bool = False,
    now: float = 100.0,
    cooldown_ends: float = 0.0,
) -> Facts:
    return Facts(
        pin=before.pin,
        state=before.state,
        facts=before.facts,
        paused=before.paused,
        target=before.facts.head,
        owner=owner,
        conflicted=conflicted,
        base=BranchHead("main", BASE, "t" * 40),
        now=now,
        cooldown_ends=cooldown_ends,
    )


def test_a_pin_paused_in_config_waits() -> None:
    paused = BRANCH_PIN.model_copy(update={"paused": True})
    decided = decide_first(first(pin=paused, pulls=[pull(7)]))
    assert decided == Decision(Action.PAUSE, HEAD, REASON_PAUSED_IN_CONFIG, 7)


def test_a_pin_paused_by_a_command_says_by_whom() -> None:
    decided = decide_first(first(paused={"by": "alice"}))
    assert decided == Decision(Action.PAUSE, HEAD, REASON_PAUSED_BY.format(by="alice"))


def test_a_tag_pin_refuses_a_downgrade() -> None:
    choice = TagChoice("v1.0.0", {"v1.0.0": CHOSEN, "v2.0.0": HEAD})
    decided = decide_first(first(pin=TAG_PIN, pinned="v2.0.0", head="v1.0.0", tags=choice))
    reason = downgrade(TAG_PIN, "v2.0.0", "v1.0.0")
    assert reason is not None
    assert decided == Decision(Action.REFUSE, "v1.0.0", reason)


def test_a_tag_pin_refuses_a_tag_that_moved() -> None:
    state = PinState(extra={"tag_commits": {"v2.0.0": CHOSEN}})
    choice = TagChoice("v2.0.0", {"v1.0.0": PINNED, "v2.0.0": HEAD})
    decided = decide_first(
        first(pin=TAG_PIN, state=state, pinned="v1.0.0", head="v2.0.0", tags=choice)
    )
    reason = REASON_TAG_MOVED.format(tag="v2.0.0", upstream="up/fa", old7=CHOSEN[:7], new7=HEAD[:7])
    assert decided == Decision(Action.REFUSE, "v2.0.0", reason)


def test_a_newer_tag_is_looked_into() -> None:
    choice = TagChoice("v2.0.0", {"v1.0.0": PINNED, "v2.0.0": HEAD})
    decided = decide_first(first(pin=TAG_PIN, pinned="v1.0.0", head="v2.0.0", tags=choice))
    assert decided == Decision(Action.LOOK_FURTHER, "v2.0.0")


def test_a_pin_at_its_target_closes_the_bots_pr() -> None:
    decided = decide_first(first(pinned=HEAD, pulls=[pull(9)]))
    assert decided == Decision(Action.CLOSE, HEAD, pr=9)


def test_a_maintainers_choice_is_the_target_while_upstream_stays() -> None:
    state = PinState(extra={"manual": {"target": CHOSEN, "while_head": HEAD}})
    assert decide_first(first(state=state)) == Decision(Action.LOOK_FURTHER, CHOSEN)
    moved_on = first(state=state, head="f" * 40)
    assert decide_first(moved_on) == Decision(Action.LOOK_FURTHER, "f" * 40)


def test_mergeable_is_asked_only_of_the_bots_pr_at_the_target_on_a_moved_base() -> None:
    base = BranchHead("main", BASE, "t" * 40)
    bots = first(state=PinState(source=PINNED, extra={"base": "0" * 40}), pulls=[pull(3)])
    assert asks_mergeable(bots, HEAD, HEAD, base)
    assert not asks_mergeable(first(state=PinState(source=PINNED)), HEAD, HEAD, base)
    same_base = first(state=PinState(source=PINNED, extra={"base": BASE}), pulls=[pull(3)])
    assert not asks_mergeable(same_base, HEAD, HEAD, base)
    assert not asks_mergeable(bots, None, HEAD, base)


def test_a_humans_branch_is_left_alone() -> None:
    decided = decide(further(first(pulls=[pull(4)]), owner=None))
    assert decided == Decision(Action.LEAVE_HUMAN, HEAD, pr=4)


def test_the_bots_pr_at_the_target_stays() -> None:
    before = first(state=PinState(source=PINNED), pulls=[pull(4)])
    assert decide(further(before, owner=HEAD)) == Decision(Action.ALREADY_THERE, HEAD, pr=4)


@pytest.mark.parametrize(
    "state",
    [
        PinState(source=PINNED),  # built for this target but no longer merges (conflicted)
        PinState(source="0" * 40),  # built from another pinned value
        PinState(source=PINNED, intent={"sha": "e" * 40}),  # a bump in progress
    ],
)
def test_the_bots_pr_is_rebuilt_when_it_is_not_quite_there(state: PinState) -> None:
    before = first(state=state, pulls=[pull(4)])
    decided = decide(further(before, owner=HEAD, conflicted=state.intent is None))
    assert decided == Decision(Action.BUMP, HEAD, pr=4)


def test_a_pr_a_human_closed_for_this_target_is_not_reopened() -> None:
    title = f"Bump fa from {PINNED[:7]} to {HEAD[:7]} (2 commits)"
    before = first(pulls=[pull(5, "closed", title=title)])
    decided = decide(further(before))
    reason = REASON_CLOSED_BY_HUMAN.format(number=5, target7=HEAD[:7])
    assert decided == Decision(Action.SKIP, HEAD, reason, 5)


def test_a_merged_pr_does_not_stop_the_next_bump() -> None:
    before = first(pulls=[pull(5, "closed", merged_at="2026-01-01T00:00:00Z")])
    assert decide(further(before)) == Decision(Action.BUMP, HEAD)


def test_too_many_pushes_for_one_target_wait() -> None:
    state = PinState(extra={"pushes": {HEAD: MAX_PUSHES_PER_TARGET}})
    decided = decide(further(first(state=state)))
    reason = REASON_THROTTLED.format(count=MAX_PUSHES_PER_TARGET, target7=HEAD[:7])
    assert decided == Decision(Action.THROTTLE, HEAD, reason)


def test_an_unfinished_bump_is_finished_even_past_the_push_limit() -> None:
    intent = {"sha": "e" * 40, "target": HEAD, "source": PINNED, "base": BASE}
    state = PinState(intent=intent, extra={"pushes": {HEAD: MAX_PUSHES_PER_TARGET}})
    assert decide(further(first(state=state))) == Decision(Action.BUMP, HEAD)


def test_a_landed_bump_waits_out_the_cooldown() -> None:
    decided = decide(further(first(), now=100.0, cooldown_ends=160.0))
    assert decided == Decision(Action.COOLDOWN, HEAD, REASON_COOLDOWN)
    assert decide(further(first(), now=160.0, cooldown_ends=160.0)).action is Action.BUMP
