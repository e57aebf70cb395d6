"""Reconcile ticks for landings that wait for the full CI.

Once CI is done nothing else happens on a PR whose full build never started: no status,
no build webhook. So each reconcile tick advances the landings that wait for a full build
(``LandingState.awaiting_full_build`` at the approved head), each in a follow-up under
the PR's subject (``handlers.landing``): the note that none started is said on time, and a
webhook that went missing is made up for.
"""

from __future__ import annotations

from bot.github.changes import Repo
from bot.store.kinds import Kind, pr_key
from bot.store.protocol import Store


async def waiting(store: Store, repo: Repo) -> list[int]:
    """The PRs of ``repo`` whose approved head waits for a full build, by number."""
    prefix = pr_key(repo, 0).removesuffix("0")
    numbers = []
    for key, doc in await store.list_state(Kind.LANDING):
        head = doc.get("awaiting_full_build")
        number = key.removeprefix(prefix)
        if (
            key.startswith(prefix)
            and number.isdigit()
            and head
            and head == doc.get("approved_head")
        ):
            numbers.append(int(number))
    return numbers
