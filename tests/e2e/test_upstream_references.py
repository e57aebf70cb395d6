"""Issue references in upstream commit subjects point upstream, never downstream."""

from __future__ import annotations

import re

from bot.github.neutralise import WORD_JOINER
from sandbox.git_objects import Identity
from sandbox.harness import Harness
from sandbox.vllm_shapes import DOWNSTREAM, UPSTREAM
from tests.e2e.conftest import seed
from tests.e2e.test_bump_flow import bump_pulls


async def test_every_bare_reference_in_a_subject_links_to_the_upstream(env: Harness) -> None:
    seed(env)
    await env.start()
    await env.sandbox.push_commit(
        UPSTREAM, {"csrc/m.cu": "// m\n"}, "Merge pull request #130 from dev/fix-#2 (see #131)"
    )
    await env.settle()

    [pull] = bump_pulls(env)
    body = str(pull["body"])
    for number in (130, 131):
        link = rf"\[{UPSTREAM}#{WORD_JOINER}{number}\]\([^)\s]*/{UPSTREAM}/issues/{number}\)"
        assert re.search(link, body), body
    assert f"fix-#{WORD_JOINER}2" in body  # part of a branch name: no link, and inert
    # nothing in the body is a bare reference GitHub would resolve in the downstream repo
    assert "#130" not in body.replace(f"{UPSTREAM}#", "").replace("/issues/130", "")
    assert DOWNSTREAM not in body


LONG_HISTORY = 260  # past the 250 commits GitHub's compare lists


async def test_a_long_upstream_history_lists_the_newest_commits(env: Harness) -> None:
    seed(env)
    for n in range(1, LONG_HISTORY):
        env.sandbox.commit(UPSTREAM, {"csrc/long.cu": f"// {n}\n"}, f"Old change {n}")
    await env.start()  # those pushes happened while nobody listened; this one is heard
    head = await env.sandbox.push_commit(UPSTREAM, {"csrc/last.cu": "// last\n"}, "Newest change")
    await env.settle()

    [pull] = bump_pulls(env)
    body = str(pull["body"])
    assert f"### Upstream commits ({LONG_HISTORY})" in body
    listed = [line for line in body.splitlines() if line.startswith("- 20")]
    assert "Newest change" in listed[0]  # newest first
    assert head[:7] in listed[0]
    assert f"Old change {LONG_HISTORY - 49}" in listed[-1]  # the 50 newest, no older
    assert len(listed) == 50
    assert f"… and {LONG_HISTORY - 50} more" in body
    assert str(LONG_HISTORY) in str(pull["title"])


# A roll like flash-attention's real one of 670 commits: a long-lived branch forked
# before the pin and merged since (its commits older by date than the pin, yet new to
# the range), plus the branch's own commits after the pin.
SIDE_COMMITS, MAIN_COMMITS = 640, 29  # with the merge: 670
ROLL = SIDE_COMMITS + MAIN_COMMITS + 1


def merge_heavy_roll(env: Harness, pinned: str) -> str:
    """Build the roll's commits (no webhook yet) and return the merge that ends it."""
    store = env.sandbox.store
    pin = store.read_commit(UPSTREAM, pinned)
    [fork] = pin.parents
    at = pin.committer.timestamp

    def make(parents: list[str], subject: str, when: int) -> str:
        who = Identity("Dev", "dev@example.com", when)
        return store.commit_tree(UPSTREAM, pin.tree, parents, subject, who, who)

    side = fork
    for n in range(1, SIDE_COMMITS + 1):  # dated before the pin: a long-lived branch
        side = make([side], f"Side change {n}", at - 100_000 + n)
    main = pinned
    for n in range(1, MAIN_COMMITS + 1):
        main = make([main], f"Main change {n}", at + n)
    return make([main, side], "Merge the long-lived branch (#900)", at + 1_000)


async def test_a_670_commit_roll_lists_the_newest_50_of_the_range(env: Harness) -> None:
    pinned = seed(env)
    target = merge_heavy_roll(env, pinned)
    store = env.sandbox.store
    # The trap: the newest 50 commits the target reaches, by date, include the pin.
    assert pinned in store.rev_list(UPSTREAM, target, limit=50)
    await env.start()
    env.sandbox.reset_log()
    env.sandbox.set_ref(UPSTREAM, "main", target)
    await env.sandbox.flush()
    await env.settle()

    [pull] = bump_pulls(env)
    body = str(pull["body"])
    assert f"### Upstream commits ({ROLL})" in body
    assert f"({ROLL} commits)" in str(pull["title"])
    listed = [line for line in body.splitlines() if line.startswith("- 20")]
    # Exactly the newest 50 of pinned..target, newest first: the merge, the branch's own
    # commits since the pin, then the merged branch's newest, dated before the pin.
    newest = [
        "Merge the long-lived branch",
        *(f"Main change {n}" for n in range(MAIN_COMMITS, 0, -1)),
        *(f"Side change {n}" for n in range(SIDE_COMMITS, SIDE_COMMITS - 20, -1)),
    ]
    assert len(listed) == len(newest) == 50
    for line, subject in zip(listed, newest, strict=True):
        assert f" · {subject} (" in line, (line, subject)
    # ... which is the stand-in's compare order of the range, as GitHub's is chronological
    in_range = store.read_commits(UPSTREAM, store.rev_list(UPSTREAM, f"{pinned}..{target}"))
    assert [c.message.split(" (#")[0] for c in in_range[:50]] == newest
    assert not any(pinned[:7] in line for line in listed)  # already pinned: not listed
    assert f"… and {ROLL - 50} more" in body
    # One paged compare for those 50, and no listing of the target's commits.
    compares = [r for r in env.sandbox.requests if r.operation_id == "repos/compare-commits"]
    assert sum("page" in r.query for r in compares) == 1
    assert not [r for r in env.sandbox.requests if r.operation_id == "repos/list-commits"]
    assert env.sandbox.violations == []
