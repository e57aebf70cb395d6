"""GitHub requests per bump case, counted from the stand-in's request log (counts are
deterministic, unlike times): an upstream push that opens the bump PR, one that updates
it, and the same push delivered again. Each read the bump needs is asked once per
delivery (config and base from one branch read), the file content goes inline in the
tree. Upstream's head is asked of upstream, not taken from the push (a push delivered
late, after a forced push moved the branch back, would otherwise bump to a commit the
branch no longer has), and read off the compare of the pinned commit with the branch.
"""

from __future__ import annotations

import time

from bot.service.reconcile import enqueue_tick
from sandbox.harness import Harness
from sandbox.vllm_shapes import CONFIG, DOWNSTREAM, PIN_FILE, PIN_TEMPLATE, UPSTREAM, many_pins

NEW_PR = [
    "repos/get-branch",  # the base, and with it the config kept by main's head
    "pulls/list",  # the bump branch's PRs
    "repos/compare-commits",  # upstream's head, and the commits from the pinned one to it
    "git/create-tree",  # the pin file's new content inline
    "git/create-commit",
    "git/create-ref",
    "pulls/create",
]
UPDATE = [*NEW_PR[:-2], "git/update-ref", "pulls/update"]
# An old push delivered again: upstream is asked for its head, nothing is written.
DUPLICATE = ["repos/get-branch", "pulls/list", "repos/compare-commits"]


async def push(env: Harness, n: int) -> list[str]:
    env.sandbox.reset_log()
    await env.sandbox.push_commit(UPSTREAM, {f"csrc/c{n}.cu": f"// {n}\n"}, f"Change {n} (#{n})")
    await env.settle()
    return operations(env)


def operations(env: Harness) -> list[str]:
    """The bump's requests: up to its PR write (what the PR's own webhooks then make other
    handlers read is theirs, not the bump's)."""
    found = [
        str(r.operation_id)
        for r in env.sandbox.requests
        if r.operation_id != "apps/create-installation-access-token"
    ]
    writes = [i for i, op in enumerate(found) if op in ("pulls/create", "pulls/update")]
    return found[: writes[-1] + 1] if writes else found


async def test_requests_per_bump_case(env: Harness) -> None:
    sandbox = env.sandbox
    sandbox.create_repo(UPSTREAM, files={"README.md": "x\n"}, installation_id=1)
    pinned = sandbox.head(UPSTREAM)
    files = {PIN_FILE: PIN_TEMPLATE.format(sha=pinned), ".github/followup-bot.yml": CONFIG}
    sandbox.create_repo(DOWNSTREAM, files=files, installation_id=2)
    await env.start()
    # A running bot has reconciled before: token, default branch and ETags are warm.
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), time.time(), 300.0)
    await env.settle()

    assert sorted(await push(env, 1)) == sorted(NEW_PR)
    assert sorted(await push(env, 2)) == sorted(UPDATE)
    delivered = next(
        d for d in reversed(sandbox.deliveries) if d.event == "push" and d.repo == UPSTREAM
    )
    sandbox.reset_log()
    await sandbox.deliver("push", delivered.payload)
    await env.settle()
    assert sorted(operations(env)) == sorted(DUPLICATE)
    assert len(NEW_PR) <= 8
    assert len(UPDATE) <= 7


PINS = 3
# An idle reconcile tick of several pins: the bump branches' PRs of all of them in one
# GraphQL query (before: one `pulls/list` per pin).
IDLE_TICK = [
    *("repos/get-branch", "repos/get-branch", "repos/get", "git/get-ref", "graphql"),
    # The dashboard: its live body read (a 304 once unchanged), then edited, as the first
    # tick's dashboard ran before the pins' rows were recorded.
    *("issues/get", "issues/update"),
]


async def test_a_tick_reads_every_pins_pulls_in_one_query(env: Harness) -> None:
    sandbox = env.sandbox
    sandbox.create_repo(UPSTREAM, files={"README.md": "x\n"}, installation_id=1)
    pinned = sandbox.head(UPSTREAM)
    files = many_pins([(f"pin{index}", UPSTREAM, pinned) for index in range(PINS)])
    sandbox.create_repo(DOWNSTREAM, files=files, installation_id=2)
    await env.start()
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 1.0, 300.0)
    await env.settle()
    sandbox.reset_log()
    await enqueue_tick(env.running.inbox, (DOWNSTREAM,), 301.0, 300.0)
    await env.settle()
    found = [
        str(r.operation_id)
        for r in sandbox.requests
        if r.operation_id != "apps/create-installation-access-token"
    ]
    assert sorted(found) == sorted(IDLE_TICK)
