"""Upstream's head read off a compare that names the branch (``bot.pins.compared``)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.pins.compared import Pages, Where, Whereabouts, head_of, newest_pages, pinned_to, where

PINNED, HEAD, OTHER = "a" * 40, "b" * 40, "c" * 40


def comparison(status: str, commits: list[str], total: int | None = None) -> dict[str, Any]:
    return {
        "status": status,
        "base_commit": {"sha": PINNED},
        "merge_base_commit": {"sha": OTHER},
        "commits": [{"sha": sha} for sha in commits],
        "total_commits": len(commits) if total is None else total,
        "html_url": f"https://github.example/up/repo/compare/{PINNED}...main",
    }


@pytest.mark.parametrize(
    ("status", "commits", "total", "head"),
    [
        ("identical", [], None, PINNED),  # the branch is where the pin is
        ("behind", [], None, OTHER),  # the branch went back: its head is the merge base
        ("ahead", [OTHER, HEAD], None, HEAD),  # the newest listed commit
        ("diverged", [OTHER, HEAD], None, HEAD),  # rewritten: still the newest listed
        ("ahead", [OTHER, HEAD], 300, None),  # past the 250 listed: not told
        ("ahead", [], None, None),  # an answer GitHub would not give: not guessed
        ("unknown", [HEAD], None, None),
    ],
)
def test_head_of_each_status(
    status: str, commits: list[str], total: int | None, head: str | None
) -> None:
    assert head_of(comparison(status, commits, total)) == head


def test_a_commit_without_a_sha_tells_no_head() -> None:
    assert head_of({"status": "identical", "base_commit": {}}) is None
    assert head_of({"status": "behind", "merge_base_commit": None}) is None


def test_pinned_to_links_the_shas_not_the_branch() -> None:
    pinned = pinned_to(comparison("ahead", [HEAD]), PINNED, HEAD)
    assert pinned["html_url"] == f"https://github.example/up/repo/compare/{PINNED}...{HEAD}"
    assert pinned["commits"] == [{"sha": HEAD}]  # the rest is as GitHub said


def test_pinned_to_keeps_a_link_it_cannot_read() -> None:
    odd = {**comparison("ahead", [HEAD]), "html_url": "https://github.example/elsewhere"}
    assert pinned_to(odd, PINNED, HEAD) == odd


# -- the pages that hold a long range's newest commits ---------------------------------


@pytest.mark.parametrize(
    ("total", "pages"),
    [
        (80, Pages(100, (1,))),  # one page holds the whole range
        (670, Pages(56, (12,))),  # the smallest page that leaves 50 or more: 54
        (260, Pages(52, (5,))),  # 260 = 5 x 52: the last page is full
        (620, Pages(57, (11,))),  # 620 % 57 = 50, exactly enough
    ],
)
def test_the_newest_commits_come_from_one_last_page(total: int, pages: Pages) -> None:
    assert newest_pages(total, 50) == pages
    size, [last] = pages.per_page, pages.pages
    held = total - (last - 1) * size
    assert held >= min(50, total)  # the page holds the newest 50 (or all)
    assert (last - 1) * size < total <= last * size


def test_without_such_a_size_the_last_two_pages() -> None:
    # Between 5 and 6 a page, 13 leaves 3 or 1 on the last page: two pages of 5.
    assert newest_pages(13, 5, largest=6) == Pages(5, (2, 3))


def test_one_request_for_every_total_a_roll_may_have() -> None:
    assert all(len(newest_pages(total, 50).pages) == 1 for total in range(251, 20_000))


# -- where a pinned commit off the tracked branch still is -----------------------------

SIDE, MAIN, GONE = "d" * 40, "e" * 40, "f" * 40


def test_nothing_known_of_another_pin_or_of_nothing() -> None:
    assert Whereabouts.load(None, PINNED).looked == {}
    assert Whereabouts.load({"pinned": OTHER, "looked": {"x": [SIDE, True]}}, PINNED).looked == {}
    assert Whereabouts.load({"pinned": PINNED, "looked": "bad"}, PINNED).looked == {}


def test_what_was_learnt_round_trips_through_the_state() -> None:
    known = Whereabouts(PINNED, {}).seen("side", SIDE, {"status": "behind"})
    raw = known.dump()
    assert raw == {"pinned": PINNED, "looked": {"side": [SIDE, True]}}
    assert Whereabouts.load(raw, PINNED) == known
    odd = {"pinned": PINNED, "looked": {"side": [SIDE, True], "bad": "x", "short": [SIDE]}}
    assert Whereabouts.load(odd, PINNED) == known  # entries it cannot read are dropped


@pytest.mark.parametrize(
    ("answer", "has"),
    [
        ({"status": "behind"}, True),  # the pin is in the branch's history
        ({"status": "identical"}, True),  # the branch's head is the pin
        ({"status": "diverged"}, False),
        ({"status": "ahead"}, False),  # the pin is past the branch's head
        (None, False),  # 404: no common history at all
    ],
)
def test_a_branch_has_the_pin_when_the_compare_is_behind(
    answer: dict[str, Any] | None, has: bool
) -> None:
    assert Whereabouts(PINNED, {}).seen("side", SIDE, answer).looked == {"side": (SIDE, has)}


def test_a_holder_counts_only_at_the_head_it_was_found_at() -> None:
    known = Whereabouts(PINNED, {"a": (GONE, False), "side": (SIDE, True)})
    assert known.holder({"a": GONE, "side": SIDE}) == "side"
    assert known.holder({"a": GONE, "side": OTHER}) is None  # it moved: look again


def test_only_branches_that_moved_since_are_looked_at_again() -> None:
    known = Whereabouts(PINNED, {"a": (GONE, False), "b": (SIDE, False)})
    heads = {"a": GONE, "b": OTHER, "c": SIDE, "main": MAIN}
    assert known.to_look_at(heads, "main") == ["b", "c"]
    assert known.to_look_at(heads, None) == ["b", "c", "main"]  # the branch is asked too


def test_a_deleted_branch_is_forgotten() -> None:
    known = Whereabouts(PINNED, {"a": (GONE, True), "b": (SIDE, False)})
    assert known.kept({"b": SIDE}).looked == {"b": (SIDE, False)}


@pytest.mark.parametrize(
    ("holder", "left", "verdict"),
    [
        ("main", 0, Where.TRACKED_BRANCH),  # beside a commit chosen on the branch
        ("side", 0, Where.OTHER_BRANCH),
        (None, 0, Where.NO_BRANCH),  # every branch looked at: history rewritten
        (None, 3, Where.NOT_YET),
    ],
)
def test_the_verdict(holder: str | None, left: int, verdict: Where) -> None:
    assert where(holder, left, "main") is verdict
