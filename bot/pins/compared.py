"""What upstream's compares say: the branch head, the pages that hold the newest
commits of a long range, and where a pinned commit off the tracked branch still is.

An upstream push makes every pin that follows the branch compare its pinned commit
with the new head. Asking GitHub for ``pinned...branch`` resolves the branch *now*
(so a push delivered late, after a forced push moved the branch back, cannot make
the bot bump to a commit the branch no longer has) and lists the commits in the same
answer: one request instead of a ref read and a compare.

A compare lists at most 250 commits unpaged, but it pages the whole range, in its
own (chronological) order: its last page ends with the newest commits *of the range*.
The commits list of the target is no substitute: it walks everything the target
reaches, so in a merge-heavy history it lists commits the pin already had (newer by
date than a long-lived branch merged since) and drops new ones (``newest_pages``).

A pinned commit that is not an ancestor of the tracked branch is either on another
live branch upstream (vLLM pinned a side branch's commit) or on none (upstream
rewrote its history); ``compare(branch head...pinned)`` tells, one branch at a time,
and what was found is remembered per branch head (``whereabouts``). Pure: no I/O here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

COMPARE_PATH = "/compare/"
MAX_PER_PAGE = 100  # GitHub's largest page of a compare's commits
# compare(branch head...pinned) says one of these when the branch's history has the pin.
HOLDING = frozenset({"behind", "identical"})


def head_of(comparison: Mapping[str, Any]) -> str | None:
    """The head's sha from a ``base...head`` compare (None: the answer does not say,
    because the head is past the 250 commits a compare lists)."""
    status = comparison.get("status")
    if status == "identical":
        return _sha(comparison.get("base_commit"))
    if status == "behind":  # the head is an ancestor of the base: their merge base
        return _sha(comparison.get("merge_base_commit"))
    commits = comparison.get("commits") or []
    listed_all = len(commits) >= int(comparison.get("total_commits") or 0)
    if status in ("ahead", "diverged") and commits and listed_all:
        return _sha(commits[-1])
    return None


def pinned_to(comparison: Mapping[str, Any], base: str, head: str) -> dict[str, Any]:
    """The compare as if asked for ``base...head`` by sha: its web link, which a PR body
    keeps, must not follow the branch as it moves on."""
    web = str(comparison.get("html_url") or "")
    prefix, found, _names = web.rpartition(COMPARE_PATH)
    if not found:
        return dict(comparison)
    return {**comparison, "html_url": f"{prefix}{COMPARE_PATH}{base}...{head}"}


def _sha(commit: object) -> str | None:
    if isinstance(commit, Mapping) and isinstance(commit.get("sha"), str):
        return str(commit["sha"])
    return None


@dataclass(frozen=True)
class Pages:
    """Which pages of a paged compare to ask, and their size."""

    per_page: int
    pages: tuple[int, ...]


def newest_pages(total: int, want: int, largest: int = MAX_PER_PAGE) -> Pages:
    """The pages of a ``total``-commit compare that hold its newest ``want`` commits
    (``want`` <= ``largest``): the last page of a size that leaves ``want`` or more on
    it, so one request (for every total from 251 to 200,000 at least, such a size exists
    between 50 and 100); else the last two pages of ``want``."""
    if total <= largest:
        return Pages(largest, (1,))
    for size in range(want, largest + 1):
        left = total % size
        if left == 0 or left >= want:
            return Pages(size, (-(-total // size),))
    last = -(-total // want)
    return Pages(want, (last - 1, last))


class Where(enum.StrEnum):
    """Where a pinned commit that left the tracked branch still is."""

    OTHER_BRANCH = "other-branch"  # a live branch upstream has it
    TRACKED_BRANCH = "tracked-branch"  # the branch has it, beside a target chosen on it
    NO_BRANCH = "no-branch"  # every branch was looked at: upstream rewrote history
    NOT_YET = "not-yet"  # some branches are still to be looked at


@dataclass(frozen=True)
class Whereabouts:
    """What the bot knows of a pinned commit's branches upstream: for each branch it
    looked at, the head it looked at and whether that head's history has the pin."""

    pinned: str
    looked: Mapping[str, tuple[str, bool]]

    @classmethod
    def load(cls, raw: object, pinned: str) -> Whereabouts:
        """Read back from the pin's state; what was learnt of another pin is dropped."""
        if not isinstance(raw, Mapping) or raw.get("pinned") != pinned:
            return cls(pinned, {})
        looked = raw.get("looked")
        if not isinstance(looked, Mapping):
            return cls(pinned, {})
        return cls(
            pinned,
            {
                str(branch): (str(seen[0]), bool(seen[1]))
                for branch, seen in looked.items()
                if isinstance(seen, list | tuple) and len(seen) == 2
            },
        )

    def dump(self) -> dict[str, Any]:
        return {"pinned": self.pinned, "looked": {b: list(v) for b, v in self.looked.items()}}

    def holder(self, heads: Mapping[str, str]) -> str | None:
        """A branch whose history has the pin, found at the head it still has."""
        held = (b for b, (head, has) in sorted(self.looked.items()) if has and heads.get(b) == head)
        return next(held, None)

    def to_look_at(self, heads: Mapping[str, str], known: str | None) -> list[str]:
        """The branches not looked at since they last moved, by name, but ``known`` (the
        tracked branch, when the compare that refused the pin was with its head)."""
        return [
            branch
            for branch, head in sorted(heads.items())
            if branch != known and self.looked.get(branch, ("", False))[0] != head
        ]

    def seen(self, branch: str, head: str, comparison: Mapping[str, Any] | None) -> Whereabouts:
        """With what ``compare(head...pinned)`` said (None: it answered 404)."""
        has = comparison is not None and comparison.get("status") in HOLDING
        return Whereabouts(self.pinned, {**self.looked, branch: (head, has)})

    def kept(self, heads: Mapping[str, str]) -> Whereabouts:
        """Only the branches that still exist (a deleted one holds nothing any more)."""
        return Whereabouts(self.pinned, {b: v for b, v in self.looked.items() if b in heads})


def where(holder: str | None, left: int, tracked: str) -> Where:
    """The verdict once the bot looked: a holder (the tracked branch itself, when the pin
    is beside a target chosen on it), none left to look at, or not yet."""
    if holder == tracked:
        return Where.TRACKED_BRANCH
    if holder is not None:
        return Where.OTHER_BRANCH
    return Where.NO_BRANCH if left == 0 else Where.NOT_YET
