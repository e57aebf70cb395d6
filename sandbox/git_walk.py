"""The commits ``git rev-list`` lists, in the order it lists them, without a git process.

The GitHub stand-in asks for commit lists thousands of times a run (push payloads,
compares, pull request commits), and each ``rev-list`` process cost more than the walk.
This is the walk of rev-list's default order, over any way of reading a commit:

- Every commit reachable from a hidden revision (``^sha``, the left of ``a..b``) is left
  out, and so is everything reachable from it.
- The others come out newest committer date first. git keeps the commits still to visit
  in a list sorted by date and puts a parent after every entry of the same date, so among
  equal dates the one queued first comes first; the starting revisions are queued in the
  order they were named. A heap keyed on (date, order queued) pops the same commits.
- ``skip`` and ``limit`` cut that list, then ``reverse`` turns it round (as
  ``--skip``/``--max-count`` act before ``--reverse``).

One difference is known and kept: when some hidden commits are *newer* than the commits
they hide (clock skew), git stops walking a few commits after the dates say nothing
interesting is left, and may list commits that are in fact hidden. This walk follows
reachability to the end and lists the set ``a..b`` means, which is what GitHub's compare
answers. tests/sandbox/test_git_walk.py holds it to ``git rev-list`` on histories whose
dates do not go backwards, and on any history when nothing is hidden.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Walked:
    """What the walk needs of a commit."""

    date: int  # committer date, epoch seconds
    parents: tuple[str, ...]


Read = Callable[[str], Walked]


def reachable(starts: Iterable[str], read: Read) -> set[str]:
    """``starts`` and every commit reachable from them."""
    found: set[str] = set()
    todo = list(starts)
    while todo:
        sha = todo.pop()
        if sha not in found:
            found.add(sha)
            todo.extend(read(sha).parents)
    return found


def listed(
    shown: Sequence[str],
    hidden: Sequence[str],
    read: Read,
    *,
    skip: int = 0,
    limit: int | None = None,
    reverse: bool = False,
) -> list[str]:
    """``git rev-list [--reverse] [--skip] [--max-count] shown... ^hidden...``."""
    excluded = reachable(hidden, read)
    order = itertools.count()
    queue: list[tuple[int, int, str]] = []
    queued: set[str] = set()

    def enqueue(sha: str) -> None:
        if sha not in queued and sha not in excluded:
            queued.add(sha)
            heapq.heappush(queue, (-read(sha).date, next(order), sha))

    for sha in shown:
        enqueue(sha)
    out: list[str] = []
    end = None if limit is None else skip + limit
    while queue and (end is None or len(out) < end):
        _, _, sha = heapq.heappop(queue)
        out.append(sha)
        for parent in read(sha).parents:
            enqueue(parent)
    out = out[skip:]
    return out[::-1] if reverse else out
