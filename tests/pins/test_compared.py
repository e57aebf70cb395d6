"""Upstream's head read off a compare that names the branch (``bot.pins.compared``)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.pins.compared import head_of, pinned_to

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
